"""The cuts that bring `argus observe` of a command near one program run, on the CPU: what the
control run's CUPTI file keeps, the first evidence from a run in progress, the SASS listing
made ahead, the runner's order and its tasks whose CPU tail (an ncu export) runs beside the
next tasks, and the sections of a command's source-page run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.collectors.cupti.activity import ActivityJsonlReader
from argusdb.observe.launch.first import FILE, AsmAhead, FirstEvidence, say
from argusdb.observe.runner import _ordered
from argusdb.observe.runner.backends import Collected
from argusdb.observe.runner.command import CommandReplayBackend
from argusdb.observe.runner.gpu_tools import Activity, launching_calls, write_jsonl
from argusdb.store import open_store

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "gpu" / "replay"
PROGRAM = ROOT / "tests" / "data" / "programs" / "model"
REGION = "fused_norm/layernorm_fwd/load"
SIGNALS = "duration,inst_executed,warp_stall_samples,exposed_latency"


def _kernel(corr: int, start: int, name: str = "k") -> dict[str, Any]:
    return {"kind": "CONCURRENT_KERNEL", "name": name, "start": start, "end": start + 1000,
            "correlation_id": corr, "grid_x": 1, "grid_y": 1, "grid_z": 1, "block_x": 128,
            "block_y": 1, "block_z": 1, "registers_per_thread": 32, "static_shared_memory": 0,
            "dynamic_shared_memory": 0, "stream_id": 7, "device_id": 0, "context_id": 1,
            "graph_id": 0, "graph_node_id": 0}


def test_only_the_calls_that_launched_a_recorded_kernel_are_kept(tmp_path: Path) -> None:
    kernels = [_kernel(1, 100), _kernel(4, 300)]
    fields = Activity.RUNTIME_FIELDS
    calls = [(50, 60, 1, 211, 9, 9), (70, 80, 2, 3, 9, 9), (250, 260, 4, 211, 9, 9),
             (270, 280, 5, 17, 9, 9)]
    kept = launching_calls(kernels, calls, fields)
    assert [(c["correlation_id"], c["cbid"], c["kind"]) for c in kept] == [
        (1, 211, "RUNTIME"), (4, 211, "RUNTIME")]
    recs = sorted(kernels + kept, key=lambda r: r["start"])
    path = tmp_path / "timing.1.cupti.jsonl"
    write_jsonl(path, recs)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["kind"] == "ARGUS_HEADER" and lines[-1]["records"] == 4
    assert lines[1:-1] == recs  # the same records json.dumps writes, in order
    # the reader joins each kernel to its launching call: what it kept of the dropped calls
    # was nothing (they named no kernel)
    art = ActivityJsonlReader().read(path)
    assert art.kernels == ["k"]
    batch = dict(art.batches())["kernel_launch"]
    assert batch.column("launch_api").to_pylist() == ["cudaLaunchKernel"] * 2


def _launch(i: int, binary: str, role: str = "program") -> dict[str, Any]:
    return {"i": i, "role": role, "binary": binary}


def test_first_evidence_pairs_records_as_the_split_does(tmp_path: Path) -> None:
    first = FirstEvidence(tmp_path, "k", warmup=2)
    assert not first.due(3) and first.due(4)
    launches = [_launch(0, "a", "autotune"), _launch(1, "a"), _launch(2, "a"), _launch(3, "a"),
                _launch(4, "a"), _launch(5, "a")]
    recs = [_kernel(10 + i, 1000 * i) for i in range(5)]  # launch 5 not flushed yet
    recs[4]["end"] = recs[4]["start"] + 3000
    # warm-up: launches 1 and 2 of binary a; launch 3's inputs were copied (kept apart)
    got = first.kept(list(reversed(recs)), launches, copied={3})
    assert got == {"binary": "a", "launches": 1, "median_us": 3.0}
    assert first.kept(recs[:3], launches, copied=set()) is None  # no kept launch yet


def test_first_evidence_is_printed_from_its_file(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / FILE).write_text(json.dumps({"kernel": "layernorm_fwd", "binary": "a8aad19f07bf"
                                             "77", "launches": 27, "median_us": 7.17}))
    assert say(tmp_path / FILE)["launches"] == 27
    err = capsys.readouterr().err
    assert "layernorm_fwd in the program so far: median 7.17 us over 27 launches" in err
    assert "provisional" in err
    assert say(tmp_path / "missing.json") is None


def test_the_listing_made_ahead_is_used_for_its_binary_only(tmp_path: Path) -> None:
    ahead = AsmAhead(tmp_path, warmup=1)
    assert ahead.take("a") is None  # never started
    assert ahead.due(3)
    ahead.start("a", object(), "binary.1")  # nothing compiled to list: an empty listing
    assert not ahead.due(9)
    assert ahead.take("b") is None
    assert ahead.take("a") == {"files": []}


def test_the_control_run_is_read_first_then_ncu_over_the_worker() -> None:
    def t(i: str, action: str, deps: list[str], **params: Any) -> dict[str, Any]:
        return {"id": i, "action": action, "depends_on": deps, "params": params}

    tasks = [t("find", "find_launch", []), t("replayed", "cupti_timing", ["find"], replay=True),
             t("ncu", "ncu_source", ["find"], replay=True),
             t("parent", "cupti_timing", ["find"], from_control=True),
             t("attr", "attribute", ["ncu"])]
    assert _ordered(tasks) == ["find", "parent", "ncu", "replayed", "attr"]
    # the per-run path keeps the plan's order
    plain = [{**x, "params": {}} for x in tasks]
    assert _ordered(plain) == ["find", "replayed", "ncu", "parent", "attr"]


def test_a_collection_left_for_later_is_settled_before_what_depends_on_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ncu task answered with its export still to come (as over the replay worker): the
    replayed timings run before it is ingested, attribution after, and the result is the
    same exact attribution."""
    bundle = tmp_path / "bundle"
    shutil.copytree(RECORDED / "model.replay", bundle)
    order: list[str] = []
    run = CommandReplayBackend.run

    def deferred(self: CommandReplayBackend, job: Any) -> Collected:
        order.append(f"run {job.action}")
        got = run(self, job)
        if job.action != "ncu_source":
            return got

        def later() -> Collected:
            order.append("settle ncu_source")
            return got

        return Collected([], later=later)

    monkeypatch.setattr(CommandReplayBackend, "run", deferred)
    monkeypatch.chdir(PROGRAM)
    monkeypatch.setenv("ARGUS_REPLAY", str(bundle))
    store = tmp_path / "s.duckdb"
    r = CliRunner().invoke(main, ["observe", "--region", REGION, "--signals", SIGNALS,
                                  "--store", str(store), "--json", "--", "python3",
                                  "model.py"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout.splitlines()[-1])
    assert order.index("run ncu_source") < order.index("run proton_instr") < order.index(
        "settle ncu_source")
    v = rep["attribution"]["inst_executed"]
    assert v["attributed"] == v["observed"] == 3014656 and v["unattributed_share"] == 0.0
    with open_store(store, read_only=True) as st:
        row = st.rows("SELECT status, config FROM task WHERE task_id LIKE '%ncu_source'")[0]
    assert row["status"] == "done"
    assert json.loads(row["config"])["detail"]["finished_beside_later_tasks"] is True


def test_a_command_source_page_run_asks_for_the_sections_its_signals_need(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROGRAM)
    r = CliRunner().invoke(main, ["observe", "--region", REGION, "--signals", SIGNALS,
                                  "--dry-run", "--json", "--", "python3", "model.py"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    ncu = next(t for t in plan["tasks"] if t["action"] == "ncu_source")
    assert ncu["params"]["sections"] == ["LaunchStats", "SourceCounters"]
    assert ncu["params"]["expected_passes"] == 5
    assert "5 passes observed with Nsight Compute 2025.3.1.0 on the H200 (layernorm_fwd)" in \
        ncu["why"]
