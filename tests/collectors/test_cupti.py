from __future__ import annotations

import statistics
from pathlib import Path

import pyarrow as pa
import pytest

from argusdb.collectors import detect
from argusdb.errors import InputError
from tests.conftest import DEMO

JSONL = DEMO / "softmax" / "softmax.cupti.jsonl"


def test_reads_kernel_records_as_durations() -> None:
    art = detect(JSONL).read(JSONL)
    assert art.collector == "cupti" and art.interference.timing_clean()
    batches = list(art.batches())
    ev = pa.Table.from_batches([b for t, b in batches if t == "evidence"])
    kl = pa.Table.from_batches([b for t, b in batches if t == "kernel_launch"])
    assert ev.schema.field("value").type == pa.float64()
    assert kl.schema.field("dur_ns").type == pa.int64()
    soft = [v for k, v in zip(ev["kernel"].to_pylist(), ev["value"].to_pylist(), strict=True)
            if k == "softmax_fwd"]
    assert len(soft) == 20
    # The recording's README: softmax median 32.6 µs over 20 launches.
    assert statistics.median(soft) == pytest.approx(32_544, rel=0.01)
    launches = [r for r in kl.to_pylist() if r["kernel"] == "softmax_fwd"]
    assert [r["launch"] for r in launches] == list(range(20))
    assert launches[0]["grid_x"] == 16384 and launches[0]["block_x"] == 128


def test_truncated_record_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "cut.cupti.jsonl"
    bad.write_text(JSONL.read_text()[:-40])
    with pytest.raises(InputError, match="not a JSON record"):
        list(detect(bad).read(bad).batches())
