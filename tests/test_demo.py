"""The demo store: every shipped H200 artefact ingests, and the answer comes from clean runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from argusdb import demo
from argusdb.api import connect


def test_demo_ingests_every_format_into_one_version_per_kernel(tmp_path: Path) -> None:
    with connect(tmp_path / "d.duckdb", create=True) as db:
        results = demo.build(db.store)
        assert sorted({r.kind for r in results}) == [
            "cupti.activity_jsonl", "ncu.raw_csv", "ncu.source_csv", "nvdisasm.sass",
            "triton.ttgir"]
        # All five artefacts of a kernel bind to one program version (target sm_90 throughout).
        versions = db.store.rows("SELECT program, count(DISTINCT r.program_version) AS n, "
                                 "count(*) AS runs, any_value(v.target) AS target FROM run r "
                                 "JOIN program_version v USING (program_version) "
                                 "WHERE program IS NOT NULL GROUP BY ALL ORDER BY program")
        assert versions == [{"program": "matmul", "n": 1, "runs": 5, "target": "sm_90"},
                            {"program": "softmax", "n": 1, "runs": 5, "target": "sm_90"}]
        # The CUPTI traces' other kernels (torch's fill kernels) are timeline runs of unbound
        # versions, one per trace: never evidence of the program's version.
        timeline = db.store.rows("SELECT count(*) AS n FROM run JOIN program_version "
                                 "USING (program_version) WHERE program IS NULL")
        assert timeline == [{"n": 2}]
        rows = {r["region_id"]: r for r in db.query(demo.QUESTION).to_pylist()}
        # 20 CUPTI launches each; the ncu duration (a replayed launch) is not among them.
        assert rows["softmax/softmax_fwd"]["launches"] == 20
        assert rows["softmax/softmax_fwd"]["median_us"] == pytest.approx(32.544, abs=1e-3)
        assert rows["matmul/matmul_kernel"]["launches"] == 20
        assert rows["matmul/matmul_kernel"]["median_us"] == pytest.approx(210.8, abs=0.1)
        # The instruction-level evidence is there too, joined by PC across ncu and nvdisasm.
        joined = db.store.rows(
            "SELECT count(*) AS n FROM instruction a JOIN instruction b USING (kernel, pc) "
            "JOIN run ra ON ra.run_id = a.run_id JOIN run rb ON rb.run_id = b.run_id "
            "WHERE ra.kind = 'ncu.source_csv' AND rb.kind = 'nvdisasm.sass' "
            "AND a.source_line = b.source_line")
        assert joined == [{"n": 184 + 432}]
        again = demo.build(db.store)
        assert all(r.already for r in again)


def test_argus_demo_runs_twice_in_one_folder(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The second ``argus demo`` finds its own runs (the timeline runs of torch's kernels
    included), writes nothing and answers the same questions."""
    from click.testing import CliRunner

    from argusdb.cli import main

    monkeypatch.chdir(tmp_path)
    first = CliRunner().invoke(main, ["demo"])
    assert first.exit_code == 0, first.output
    size = (tmp_path / "argus-demo.duckdb").stat().st_size
    second = CliRunner().invoke(main, ["demo"])
    assert second.exit_code == 0, second.output
    assert second.stdout == first.stdout
    assert second.stderr.count("already in store") == 10
    assert (tmp_path / "argus-demo.duckdb").stat().st_size == size
    # the runs list names the timeline versions and says what the recordings did not state
    runs = CliRunner().invoke(main, ["runs", "argus-demo.duckdb"])
    assert runs.exit_code == 0
    assert runs.stdout.count("(timeline)") == 2
    assert "? passes" not in runs.stdout and "NULL" not in runs.stdout
    assert "replay(38 passes)+pc_sampling" in runs.stdout


def test_argus_demo_refuses_a_store_with_other_runs_and_names_another_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from argusdb.cli import main
    from tests.conftest import DATA

    monkeypatch.chdir(tmp_path)
    trace = DATA / "gpu" / "softmax.default.run1.cupti.jsonl"
    r = CliRunner().invoke(main, ["ingest", "argus-demo.duckdb", str(trace)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["demo"])
    assert r.exit_code == 2
    cause, fix = r.stderr.strip().splitlines()
    assert "holds 1 run of its own (not demo recordings)" in cause
    assert fix == "  fix: pass a new path, e.g. 'argus demo argus-demo-2.duckdb'"
