"""The checker refuses step timing that mixes a profiled (or forced) run with clean runs, and
answers once the query keeps to clean runs."""

from __future__ import annotations

from pathlib import Path

import pytest

import argusdb
from argusdb.errors import QueryRefused
from argusdb.ingest.ranks import ingest_launch
from argusdb.store import open_store

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "gpu" / "xlayer"


def test_profiled_step_timing_is_not_mixed_with_clean(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with open_store(path, create=True) as st:
        for name in ("xl-overlap-events-1", "xl-overlap-profiler-1"):
            ingest_launch(st, DATA / name, options={"version": "overlap", "target": "sm_90"})
    with argusdb.connect(str(path)) as db:
        with pytest.raises(QueryRefused, match="AR02"):
            db.query("SELECT median(value) FROM evidence WHERE signal = 'step_time'")
        rows = db.query("SELECT e.rank, count(*) AS n FROM evidence e JOIN run r "
                        "USING (run_id) WHERE r.timing_clean AND e.signal = 'step_time' "
                        "GROUP BY ALL ORDER BY 1").to_pylist()
    assert rows == [{"rank": "0", "n": 63}, {"rank": "1", "n": 63}]
