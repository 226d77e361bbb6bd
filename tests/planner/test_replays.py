"""Command plans with replay: which tasks run the program, the fall-back said in the plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.observe.planner import plan

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
MODEL = PROGRAMS / "model"
SIGNALS = ["duration", "inst_executed", "warp_stall_samples", "exposed_latency"]


def _plan(replay: bool = True, limit: int | None = None) -> object:
    return plan(MODEL / "fused_norm.py", "fused_norm/layernorm_fwd/load", SIGNALS,
                command=["python3", "model.py"], cwd=str(MODEL), replay=replay,
                capture_limit=limit)


def test_replay_runs_the_program_once_and_the_rest_on_the_captured_launch() -> None:
    p = _plan()
    runs = {t.id.split(".", 1)[1]: t.runs_program for t in p.tasks if t.kind != "transform"}
    assert runs == {"find_launch": True, "cupti_timing.parent": False,
                    "cupti_timing.parent_replay": False, "ncu_source": False,
                    "proton_instr": False, "cupti_timing.forced_wait": False,
                    "attribute": None, "derive_exposed_latency": None}
    control = p.by_action("find_launch")[0]
    assert control.params["capture"] == {"limit_bytes": 4 << 30, "warmup": 5}
    assert control.params["time"] is True
    timing = {t.id.split(".", 1)[1]: t for t in p.by_action("cupti_timing")}
    assert timing["cupti_timing.parent"].params.get("from_control") is True
    assert timing["cupti_timing.forced_wait"].params["replay"] is True
    # the derivation is replayed variant minus replayed parent
    derive = p.by_action("derive_exposed_latency")[0]
    assert derive.params["parent_task"] == timing["cupti_timing.parent_replay"].id
    assert "Nsight Compute over the replay worker" in p.by_action("ncu_source")[0].why
    note = next(n for n in p.notes if n.startswith("replay:"))
    assert "the program runs once (find_launch); 4 collection(s)" in note
    assert "over --capture-limit" in note and "host-built TMA descriptor" in note
    assert p.request["replay"] is True


def test_no_replay_runs_the_program_for_every_collection() -> None:
    p = _plan(replay=False)
    collects = [t for t in p.tasks if t.kind == "collect"]
    assert all(t.runs_program for t in collects) and len(collects) == 4
    assert not any(t.params.get("replay") or t.params.get("from_control") for t in collects)
    assert "capture" not in p.by_action("find_launch")[0].params
    assert p.notes[-1] == "per run: each of the 4 collections runs the program again " \
                          "(--no-replay)"


def test_the_plan_estimates_each_task_from_shipped_h200_medians() -> None:
    p = _plan(replay=False)
    ncu = p.by_action("ncu_source")[0]
    assert ncu.estimate == {"wall_s": 12.56, "gpu_s": 10.11, "from_tasks": 0,
                            "basis": "shipped H200 median"}


@pytest.mark.parametrize("flag", [[], ["--no-replay"]])
def test_dry_run_json_marks_runs_program(flag: list[str], monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.chdir(MODEL)
    r = CliRunner().invoke(main, ["observe", "--region", "fused_norm/layernorm_fwd/load",
                                  "--signals", ",".join(SIGNALS), "--dry-run", "--json",
                                  *flag, "--", "python3", "model.py"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    program_runs = sum(1 for t in doc["tasks"] if t["runs_program"])
    assert program_runs == (5 if flag else 1)
    assert all("runs_program" in t for t in doc["tasks"])


def test_a_bad_capture_limit_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(MODEL)
    r = CliRunner().invoke(main, ["observe", "--region", "fused_norm/layernorm_fwd/load",
                                  "--signals", "duration", "--dry-run", "--capture-limit",
                                  "lots", "--", "python3", "model.py"])
    assert r.exit_code == 2 and "--capture-limit lots: not a size" in r.output
