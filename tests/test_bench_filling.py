"""Smoke test of bench/bench_filling.py: the forced-wait store it builds, and its sequential
mode (real `argus ingest` commands one after another)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_filling import build, sequential


def test_forced_wait_store_keeps_its_derivation_as_source_pages_arrive(tmp_path: Path) -> None:
    st = build(tmp_path / "s.duckdb", "softmax-fw", 3)
    try:
        pages = st.sql("SELECT count(*) FROM run WHERE artefact_name LIKE '%.source.csv' "
                       "OR artefact_sha256 LIKE 'fill%'").fetchone()
        # one derived value, built once: the source pages are no input of the probe's group
        built = st.rows("SELECT program_version AS grp, n_rows FROM materialization "
                        "WHERE name = 'derivation'")
        assert pages == (3,)
        assert [r["n_rows"] for r in built] == [1]
        assert str(built[0]["grp"]).startswith("exposed_latency:")
    finally:
        st.close()


def test_sequential_mode_runs_argus_ingest_commands(capsys: pytest.CaptureFixture[str]) -> None:
    sequential("softmax-fw", 2)
    out = capsys.readouterr().out
    # the listing, the probe's two runs, then the two ingested source pages
    assert "store: 5 runs" in out and "1 derived rows" in out
    assert "first 2 ingests" in out and "last 2" in out
