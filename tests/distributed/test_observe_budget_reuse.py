"""``argus observe --budget-s`` and reuse for ``-- torchrun`` commands, on a CPU.

The store's recorded costs and launches come from one real observation answered by the
recorded 2-H200 launches (``ARGUS_DIST_REPLAY``, as CI runs the GPU path): its tasks' wall
seconds are what the budget is fitted with, its launch groups what a later request reuses.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from argusdb.store import open_store
from tests.distributed.test_observe_torchrun import XL, observe, replay_dir, torchrun

KERNEL = "tp_block/bias_gelu_kernel"
SERIAL = ["--option", "version=serial", "--option", "target=sm_90"]
OVERLAP = ["--option", "version=overlap", "--option", "target=sm_90"]


def _doc(out: str) -> dict[str, Any]:
    return json.loads(out[out.index("{"):])


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One replayed observation of the serial version: every launch mode, recorded costs."""
    tmp = tmp_path_factory.mktemp("budget")
    mp = pytest.MonkeyPatch()
    mp.chdir(XL)
    mp.setenv("TRITON_INTERPRET", "1")
    mp.setenv("ARGUS_DIST_REPLAY", str(replay_dir(tmp, "serial")))
    store = tmp / "s.duckdb"
    code, out = observe(["--region", KERNEL, "--signals", "duration,exposed_communication",
                         "--store", str(store), *SERIAL, "--json"], torchrun(2))
    mp.undo()
    assert code == 0, out
    rep = json.loads(out[out.index('{"ok"'):])
    return {"store": store, "report": rep, "tmp": tmp}


@pytest.fixture(autouse=True)
def _in_program_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(XL)
    monkeypatch.delenv("ARGUS_DIST_REPLAY", raising=False)
    monkeypatch.delenv("ARGUS_STEP_MARK", raising=False)


def _plan(store: Path, *extra: str, signals: str = "step_time,duration,exposed_communication",
          n: int = 2, region: str = KERNEL, opts: list[str] = OVERLAP) -> tuple[int, str]:
    return observe(["--region", region, "--signals", signals, "--store", str(store), *opts,
                    "--dry-run", "--json", *extra], torchrun(n, version="overlap"))


def _est(doc: dict[str, Any]) -> float:
    return sum(t["estimate"]["wall_s"] for t in doc["tasks"] if not t["reuse"])


def test_budget_drops_the_timeline_launch_then_signals_by_recorded_costs(
        observed: dict[str, Any]) -> None:
    store = observed["store"]
    code, out = _plan(store)  # another version: nothing to reuse, every task has a cost
    assert code == 0, out
    full = _doc(out)
    cost = {t["action"]: t["estimate"]["wall_s"] for t in full["tasks"]}
    assert {t["action"]: t["estimate"]["same_world_size"] for t in full["tasks"]} == {
        "torchrun_command": True, "dist_events": True, "collectives_forced_sync": None,
        "dist_profiler": True, "dist_forced": True, "dist_cupti": True, "dist_overlap": None}
    with open_store(store, read_only=True) as st:  # the estimates are the recorded costs
        rec = {r["action"]: r["wall_s"] for r in st.rows(
            "SELECT action, wall_s FROM plan_cost_task WHERE status = 'done'")}
    assert cost == {a: rec[a] for a in cost}
    total = _est(full)
    # 1. over by less than the profiler launch: only that launch goes (no signal needs it)
    budget = total - cost["dist_profiler"] / 2
    code, out = _plan(store, "--budget-s", f"{budget:.6f}")
    assert code == 0, out
    doc = _doc(out)
    assert doc["request"]["dropped_launches"] == ["dist_profiler"]
    assert doc["request"]["dropped_signals"] == []
    assert "dist_profiler" not in [t["action"] for t in doc["tasks"]]
    assert any(n.startswith("dropped the dist_profiler launch") for n in doc["notes"])
    assert _est(doc) <= budget
    # 2. room for the clean launch only: both signals with launches of their own are dropped
    floor = cost["torchrun_command"] + cost["dist_events"] + cost["dist_overlap"]
    code, out = _plan(store, "--budget-s", f"{floor * 1.001 + 1e-4:.6f}")
    assert code == 0, out
    doc = _doc(out)
    assert sorted(doc["request"]["dropped_signals"]) == ["duration", "exposed_communication"]
    assert doc["request"]["signals"] == ["step_time"]
    assert [t["action"] for t in doc["tasks"]] == ["torchrun_command", "dist_events",
                                                   "dist_overlap"]
    assert sum(n.startswith("dropped duration") or n.startswith("dropped exposed_comm")
               for n in doc["notes"]) == 2
    # 3. below the smallest plan: refused, exit 2
    code, out = _plan(store, "--budget-s", f"{floor / 2:.6f}")
    assert code == 2 and "raise the budget" in out and "Traceback" not in out, out


def test_budget_without_recorded_costs_is_refused(tmp_path: Path) -> None:
    code, out = _plan(tmp_path / "empty.duckdb", "--budget-s", "60")
    assert code == 2 and "no recorded cost" in out and "Traceback" not in out, out


def test_estimates_say_which_world_size_they_come_from(observed: dict[str, Any]) -> None:
    code, out = _plan(observed["store"], n=4)
    assert code == 0, out
    est = {t["action"]: t["estimate"] for t in _doc(out)["tasks"]}
    assert est["dist_events"]["same_world_size"] is False  # pooled from the 2-rank launch
    assert all(e["from_tasks"] == 1 and e["same_world_size"] is not True for e in est.values())


def test_the_same_request_reuses_every_launch_and_stores_nothing_new(
        observed: dict[str, Any], tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    shutil.copy(observed["store"], store)
    with open_store(store, read_only=True) as st:
        runs = st.rows("SELECT count(*) AS n FROM run")[0]["n"]
    code, out = observe(["--region", KERNEL, "--signals", "duration,exposed_communication",
                         "--store", str(store), *SERIAL, "--json"], torchrun(2))
    assert code == 0, out  # no ARGUS_DIST_REPLAY and no GPU here: only reuse can answer
    rep = json.loads(out[out.index('{"ok"'):])
    first = observed["report"]
    collect = [t for t in rep["tasks"] if t["action"].startswith("dist_")
               and t["action"] != "dist_overlap"]
    assert {t["action"] for t in collect} == {"dist_events", "dist_forced", "dist_profiler",
                                             "dist_cupti"}
    assert all(t["status"] == "reused" and t["reuse"]["launch_group"] ==
               t["detail"]["launch_group"] for t in collect)
    groups = {t["action"]: t["detail"]["launch_group"] for t in first["tasks"]
              if t["action"] in {c["action"] for c in collect}}
    assert {t["action"]: t["reuse"]["launch_group"] for t in collect} == groups
    # the answers and the evidence are those of the launches reused
    assert rep["evidence"]["step_time"]["observed"] > 0
    for sig in ("duration", "exposed_communication"):
        assert rep["distributed"]["signals"][sig]["per_rank"] == \
            first["distributed"]["signals"][sig]["per_rank"]
    with open_store(store, read_only=True) as st:
        assert st.rows("SELECT count(*) AS n FROM run")[0]["n"] == runs
        assert st.rows("SELECT count(*) AS n FROM plan_cost_task WHERE status = 'reused'"
                       )[0]["n"] == 4


@pytest.mark.parametrize(("args", "reused", "needle"), [
    # another rank count: same version and modes, not the same launch
    ({"n": 4, "signals": "step_time", "opts": SERIAL}, set(), "the plan launches 4"),
    # another program version (options): nothing of it is stored
    ({"signals": "step_time"}, set(), "no stored runs of program version"),
    # a range the clean launch recorded: reused; one it did not record: launched again
    ({"region": "tp_block/mlp", "signals": "duration", "opts": SERIAL},
     {"dist_events", "dist_profiler"}, None),
    ({"region": "tp_block/attention", "signals": "duration", "opts": SERIAL},
     {"dist_profiler"}, "no record_function range 'attention'"),
])
def test_only_launches_that_answer_the_task_are_reused(
        observed: dict[str, Any], args: dict[str, Any], reused: set[str],
        needle: str | None) -> None:
    code, out = _plan(observed["store"], **args)
    assert code == 0, out
    doc = _doc(out)
    assert {t["action"] for t in doc["tasks"] if t["reuse"]} == reused
    if needle:
        assert any(needle in n for n in doc["notes"]), doc["notes"]


def test_another_step_mark_is_not_answered_by_stored_steps(
        observed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_STEP_MARK", "train_step")
    code, out = _plan(observed["store"], signals="step_time", opts=SERIAL)
    assert code == 0, out
    doc = _doc(out)
    events = next(t for t in doc["tasks"] if t["action"] == "dist_events")
    assert events["reuse"] is None
    assert any("no steps named 'train_step'" in n for n in doc["notes"])
