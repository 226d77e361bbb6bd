"""What the CLI needs is library API: runs, snapshots, conservation, variant checks, and one
ingest path (``argus ingest`` and ``Connection.ingest`` leave the same refreshed store)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb import demo
from argusdb.api import RUN_COLUMNS, SNAPSHOT_COLUMNS, checked, connect
from argusdb.cli import main
from argusdb.errors import UsageError
from argusdb.store import open_store
from tests.conftest import DEMO, KERNELS

SOFTMAX = KERNELS / "softmax.py"
ARTEFACTS = [DEMO / "softmax" / f"softmax.{s}" for s in ("ttgir", "sass", "source.csv")]


def test_runs_snapshots_and_conservation(tmp_path: Path) -> None:
    with connect(tmp_path / "a.duckdb", create=True) as db:
        results = db.ingest_many(ARTEFACTS, SOFTMAX, dict(demo.OPTIONS))
        runs = db.runs()
        assert tuple(runs.column_names) == RUN_COLUMNS
        assert runs.column("run_id").to_pylist() == [r.run_id for r in results]
        snaps = db.snapshots()
        assert tuple(snaps.column_names) == SNAPSHOT_COLUMNS
        assert snaps.column("run_ids").to_pylist() == [[r.run_id for r in results]]
        cons = db.conservation().to_pylist()
        assert cons and all(r["ok"] for r in cons)
        summary = db.conservation(summary=True).to_pylist()
        assert {(r["run_id"], r["kernel"]) for r in summary} == {
            (r["run_id"], r["kernel"]) for r in cons}
        assert sum(r["signals"] for r in summary) == len(cons)
        assert all(r["conserved"] == r["signals"] for r in summary)


def test_cli_ingest_and_connection_ingest_are_one_path(tmp_path: Path) -> None:
    """Both leave the checker's metadata summary fresh (nothing left to refresh)."""
    cli_store, api_store = tmp_path / "cli.duckdb", tmp_path / "api.duckdb"
    res = CliRunner().invoke(main, ["ingest", str(cli_store), *map(str, ARTEFACTS),
                                    "--program", str(SOFTMAX), "--option", "target=sm_90"])
    assert res.exit_code == 0, res.output
    with connect(api_store, create=True) as db:
        for p in ARTEFACTS:
            db.ingest(p, SOFTMAX, {"target": "sm_90"})
    for path in (cli_store, api_store):
        with open_store(path) as st:
            assert checked.refresh_metadata(st) == "fresh", path
            assert st.sql("SELECT count(*) FROM region_attribution").fetchone() != (0,)


def test_variant_checks_need_a_writable_connection_and_a_variant(tmp_path: Path) -> None:
    path = tmp_path / "v.duckdb"
    with connect(path, create=True) as db:
        version = db.ingest(ARTEFACTS[2], SOFTMAX, {"target": "sm_90"}).program_version
        with pytest.raises(UsageError, match="is not a variant of"):
            db.record_variant_check(version, "nosuchparent", 0.0)
    with connect(path, read_only=True) as db, pytest.raises(UsageError, match="read-only"):
        db.record_variant_check(version, "nosuchparent", 0.0)
