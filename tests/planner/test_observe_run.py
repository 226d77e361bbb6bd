"""observe() through the real runner (branch gpu) replaying the H200 recordings on a CPU.

``ARGUS_REPLAY`` makes the runner answer collections from ``tests/data/gpu`` (what the live path
recorded on the H200), so planning, running, ingesting, reuse and costs are all real here; only
the GPU is replaced by its recordings.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import argusdb
from argusdb.store import open_store
from tests.conftest import DATA, GPU_KERNELS

observe_mod = importlib.import_module("argusdb.observe")
SOFTMAX = GPU_KERNELS / "softmax.py"


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> None:
    # Replaying needs no GPU: observe runs on this CPU because ARGUS_REPLAY is set.
    monkeypatch.setattr(observe_mod, "has_gpu", lambda: False)
    monkeypatch.setenv("ARGUS_REPLAY", str(DATA / "gpu"))


def statuses(obs: observe_mod.Observation) -> list[tuple[str, str]]:
    return [(t["action"], t["status"]) for t in obs.report["tasks"]]


@pytest.mark.usefixtures("replay")
def test_second_observe_reuses_what_the_first_collected(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    first = argusdb.observe("softmax/softmax_fwd/load", ["exposed_latency"], store=store,
                            source=SOFTMAX, workdir=tmp_path / "w1")
    assert statuses(first) == [("find_launch", "done"), ("cupti_timing", "done"),
                               ("forced_wait", "done"), ("cupti_timing", "done"),
                               ("derive_exposed_latency", "done")]
    assert first.report["evidence"] == {"duration": {"observed": 100},
                                        "exposed_latency": {"derived": 1}}
    second = argusdb.observe("softmax/softmax_fwd/load", ["exposed_latency"], store=store,
                             source=SOFTMAX, workdir=tmp_path / "w2")
    assert statuses(second) == [("find_launch", "done"), ("cupti_timing", "reused"),
                                ("forced_wait", "reused"), ("cupti_timing", "reused"),
                                ("derive_exposed_latency", "done")]
    with open_store(store) as st:
        collected = {r["task_id"].split(".", 1)[1]: r["run_id"] for r in st.rows(
            "SELECT task_id, run_id FROM run WHERE task_id LIKE ?", [first.plan.plan_id + "%"])}
        derived = st.rows("SELECT value FROM evidence WHERE evidence_class = 'derived'")
        cost = st.rows("SELECT plan_id, tasks, reused, gpu_s FROM plan_cost ORDER BY plan_id = ?",
                       [second.plan.plan_id])
    reused = {t.id.split(".", 1)[1]: t.reuse["run_id"] for t in second.plan.tasks
              if t.reuse and t.reuse["run_id"]}
    assert reused == collected == {"cupti_timing.parent": collected["cupti_timing.parent"],
                                   "cupti_timing.forced_wait":
                                       collected["cupti_timing.forced_wait"]}
    # One exposed-latency value for the region; the second plan read the same runs again.
    assert len(derived) == 1
    assert second.report["evidence"]["exposed_latency"] == {"derived": 1}
    # What reuse saved: the recorded device seconds of the two timing runs.
    assert [(c["tasks"], c["reused"]) for c in cost] == [(5, 0), (5, 3)]
    assert cost[0]["gpu_s"] > 0 and cost[1]["gpu_s"] == 0


@pytest.mark.usefixtures("replay")
def test_observe_returns_the_regions_evidence(tmp_path: Path) -> None:
    obs = argusdb.observe("softmax/softmax_fwd", ["duration"], store=tmp_path / "s.duckdb",
                          source=SOFTMAX, workdir=tmp_path / "w")
    assert obs.evidence is not None and obs.evidence.num_rows == 50
    assert set(obs.evidence.column("region_id").to_pylist()) == {"softmax/softmax_fwd"}
    # The H200 recording: median 32.78 µs over 50 launches (tests/data/gpu/README.md).
    assert float(np.median(obs.evidence.column("value").to_numpy())) == 32784.0
    # Another request on the same kernel reuses that clean timing as its parent side.
    later = argusdb.observe("softmax/softmax_fwd/load", ["exposed_latency"],
                            store=tmp_path / "s.duckdb", source=SOFTMAX, workdir=tmp_path / "w2")
    timing = later.plan.by_action("cupti_timing")[0]
    assert timing.reuse is not None
    with open_store(tmp_path / "s.duckdb") as st:
        assert timing.reuse["run_id"] == st.rows(
            "SELECT run_id FROM run WHERE task_id = ?", [obs.plan.tasks[1].id])[0]["run_id"]
        assert st.rows("SELECT region_id, n_tasks, n_reused FROM plan ORDER BY created_at") == [
            {"region_id": "softmax/softmax_fwd", "n_tasks": 2, "n_reused": 0},
            {"region_id": "softmax/softmax_fwd/load", "n_tasks": 5, "n_reused": 1}]


@pytest.mark.usefixtures("replay")
def test_a_dry_run_after_a_run_estimates_its_cost_from_it(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    argusdb.observe("softmax/softmax_fwd/load", ["exposed_latency", "inst_executed"],
                    store=store, source=SOFTMAX, workdir=tmp_path / "w")
    with open_store(store) as st:
        spent = st.rows("SELECT action, gpu_s FROM plan_cost_action WHERE gpu_s > 0 "
                        "ORDER BY action")
    # The recorded device seconds of the ncu replay and of the variant's timing.
    assert [r["action"] for r in spent] == ["cupti_timing", "ncu_source"]
    other = GPU_KERNELS / "matmul.py"
    dry = argusdb.observe("matmul/matmul_kernel/mainloop", ["exposed_latency", "inst_executed"],
                          store=store, source=other, dry_run=True)
    est = dry.report["estimate"]
    # Nothing of matmul is in the store: every task runs, each costed by softmax's tasks.
    assert est["unknown"] == [] and est["estimated"] == len(dry.plan.tasks)
    ncu = next(r["gpu_s"] for r in spent if r["action"] == "ncu_source")
    assert est["gpu_s"] >= ncu > 0


@pytest.mark.usefixtures("replay")
def test_instrumented_scope_timing_is_reused_with_its_variant(tmp_path: Path) -> None:
    """A kernel at warp scope: Proton scopes at its three regions (the variant recorded on the
    H200), per-warp scope cycles; the second request reuses the variant and both runs."""
    store = tmp_path / "s.duckdb"
    first = argusdb.observe("softmax/softmax_fwd", ["duration"], {"warp": "each"}, store=store,
                            source=SOFTMAX, workdir=tmp_path / "w1")
    assert statuses(first) == [("find_launch", "done"), ("proton_scopes", "done"),
                               ("cupti_timing", "done"), ("proton_instr", "done")]
    ev = first.evidence
    assert ev is not None
    cycles = [r for r in ev.to_pylist() if r["signal"] == "scope_cycles"]
    assert cycles and all(r["warp"] != "all" for r in cycles)
    assert first.report["evidence"]["scope_cycles"] == {"attributed": 6144, "observed": 6144}
    second = argusdb.observe("softmax/softmax_fwd", ["duration"], {"warp": "each"}, store=store,
                             source=SOFTMAX, workdir=tmp_path / "w2")
    assert statuses(second) == [("find_launch", "done"), ("proton_scopes", "reused"),
                                ("cupti_timing", "reused"), ("proton_instr", "reused")]
    instr = second.plan.by_action("proton_instr")[0]
    assert instr.reuse is not None and "(instrumentation)" in instr.reuse["why"]
    assert "scope_cycles for softmax_fwd at launch=all, warp=each" in instr.reuse["why"]
    assert second.report["evidence"] == first.report["evidence"]


@pytest.mark.usefixtures("replay")
def test_repeating_a_request_still_returns_its_evidence(tmp_path: Path) -> None:
    # The replayed region-scope run is the recording of the three-region variant, so the
    # load-only variant the plan asks for is not in the store and is collected again; its
    # artefact is already ingested (same bytes), and observe still returns that run's rows.
    store = tmp_path / "s.duckdb"
    for i in range(2):
        obs = argusdb.observe("softmax/softmax_fwd/load", ["duration"], {"warp": "each"},
                              store=store, source=SOFTMAX, workdir=tmp_path / f"w{i}")
        assert obs.report["evidence"] == {"scope_cycles": {"attributed": 2048, "observed": 6144},
                                          "duration": {"observed": 50}}
    assert statuses(obs)[2] == ("cupti_timing", "reused")  # the clean reference timing
