"""The checker's metadata summary: persisted by read-write stores, never stale."""

from __future__ import annotations

from pathlib import Path

from argusdb import checker, demo
from argusdb.api import connect
from argusdb.checker.provenance import Metadata
from argusdb.ingest import ingest_path
from argusdb.regions import ProgramSource
from tests.conftest import DEMO, KERNELS

Q = "SELECT median(value) FROM evidence WHERE region_id = 'softmax/softmax_fwd'"


def test_summary_is_persisted_reused_read_only_and_rebuilt_after_ingest(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with connect(path, create=True) as db:
        db.ingest(DEMO / "softmax" / "softmax.cupti.jsonl", KERNELS / "softmax.py",
                  dict(demo.OPTIONS))
        assert db.check(Q) == []
        assert Metadata.of(db.store).summary("evidence")[0] == "main._argus_meta_evidence"
    with connect(path, read_only=True) as db:
        assert Metadata.of(db.store).summary("evidence")[0] == "main._argus_meta_evidence"
        assert db.check(Q) == []
    with connect(path) as db:
        # a second version of softmax arrives: the same question now spans two versions
        db.ingest(DEMO / "softmax" / "softmax.cupti.jsonl", KERNELS / "softmax.py",
                  {**demo.OPTIONS, "num_warps": "8"})
        assert [f.code for f in db.check(Q)] == ["AR01"]
    with connect(path, read_only=True) as db:
        assert [f.code for f in db.check(Q)] == ["AR01"]


def test_stale_summary_on_a_read_only_store_is_rebuilt_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with connect(path, create=True) as db:
        db.ingest(DEMO / "softmax" / "softmax.cupti.jsonl", KERNELS / "softmax.py",
                  dict(demo.OPTIONS))
        checker.refresh_metadata(db.store)
    with connect(path) as db:  # a writer that never refreshes the checker's summaries
        ingest_path(db.store, DEMO / "softmax" / "softmax.cupti.jsonl",
                    ProgramSource.from_path(KERNELS / "softmax.py"),
                    {**demo.OPTIONS, "num_warps": "8"})
    with connect(path, read_only=True) as db:
        assert [f.code for f in db.check(Q)] == ["AR01"]
        assert Metadata.of(db.store).summary("evidence")[0] == "temp._argus_meta_evidence"
