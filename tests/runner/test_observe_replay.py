"""``argus observe`` end to end on a CPU: the real planner and runner, the H200 recordings."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.observe.runner import execute
from argusdb.observe.runner.backends import LiveBackend
from argusdb.store import open_store
from tests.conftest import DATA, GPU_KERNELS

observe_mod = importlib.import_module("argusdb.observe")
KERNELS = GPU_KERNELS


def test_observe_cli_replays_the_recorded_runs(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setattr(observe_mod, "has_gpu", lambda: True)
    monkeypatch.setenv("ARGUS_REPLAY", str(DATA / "gpu"))
    store = tmp_path / "obs.duckdb"
    r = CliRunner().invoke(main, ["observe", str(KERNELS / "attention.py"), "--region",
                                  "attention/attn_fwd/load_k", "--signals",
                                  "exposed_latency,inst_executed", "--store", str(store),
                                  "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout.splitlines()[-1])
    assert [(t["action"], t["status"]) for t in doc["tasks"]] == [
        ("find_launch", "done"), ("cupti_timing", "done"), ("forced_wait", "done"),
        ("ncu_source", "done"), ("cupti_timing", "done"), ("attribute", "done"),
        ("derive_exposed_latency", "done")]
    assert doc["evidence"]["exposed_latency"] == {"derived": 1}
    assert doc["evidence"]["inst_executed"]["attributed"] == 1
    with open_store(store) as st:
        v = st.rows("SELECT value FROM evidence WHERE evidence_class = 'derived'")
    # attention causal: forced wait on K 518.2 us vs 474.3 us (medians of the recordings)
    assert 40e3 < v[0]["value"] < 50e3


@pytest.mark.gpu
def test_live_observe_of_softmax_load_on_this_gpu(tmp_path: Path) -> None:
    from argusdb.observe.planner import plan as make_plan

    src = Path(__file__).resolve().parents[2] / "argusdb" / "demo" / "kernels" / "softmax.py"
    with open_store(tmp_path / "live.duckdb", create=True) as st:
        p = make_plan(src, "softmax/softmax_fwd/load", ["exposed_latency"], None, st).to_json()
        res = execute(p, st, src, tmp_path / "work", False, LiveBackend())
        assert [r.status for r in res] == ["done"] * len(res)
        assert st.rows("SELECT passed FROM variant_check") == [{"passed": True}]
        assert all(r.gpu_s and r.gpu_s > 0 for r in res if r.kind == "collect")


def test_observe_of_a_region_duration_replays_the_proton_instrumentation(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ARGUS_REPLAY", str(DATA / "gpu"))
    store = tmp_path / "obs.duckdb"
    r = CliRunner().invoke(main, ["observe", str(KERNELS / "softmax.py"), "--region",
                                  "softmax/softmax_fwd/load", "--signals", "duration",
                                  "--store", str(store), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout.splitlines()[-1])
    assert [(t["action"], t["status"]) for t in doc["tasks"]] == [
        ("find_launch", "done"), ("proton_scopes", "done"), ("cupti_timing", "done"),
        ("proton_instr", "done")]
    # 512 rows x 4 warps: one scope instance per warp; the kernel's clean timing alongside
    assert doc["evidence"]["scope_cycles"]["attributed"] == 2048
    assert doc["evidence"]["duration"] == {"observed": 50}
    with open_store(store) as st:
        bound = st.rows("SELECT transform, transform_task_id FROM program_version "
                        "WHERE parent_version IS NOT NULL ORDER BY transform")
        runs = st.rows("SELECT kind, instrumentation FROM run ORDER BY run_seq")
    pid = doc["plan_id"]
    # the plan asked for the load scope; the recording instrumented all three regions, and the
    # evidence is bound to that variant (the planned one stays registered without runs)
    assert bound == [
        {"transform": "proton_scopes:softmax/softmax_fwd/load",
         "transform_task_id": f"{pid}.proton_scopes"},
        {"transform": "proton_scopes:softmax/softmax_fwd/load,softmax/softmax_fwd/reduce,"
                      "softmax/softmax_fwd/store", "transform_task_id": f"{pid}.proton_scopes"}]
    assert [r["instrumentation"] for r in runs] == [False, True]
