"""observe() with a runner: the planner's side of the runner contract, on recorded data.

The runner (``argusdb.runner``, branch gpu) is replaced by a test double that does what the
contract says for a plan whose collections are all reused: it records each task's status and
cost in the ``task`` table under the plan's task ids. The evidence comes from the real H200
demo recordings in the store.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import argusdb
from argusdb.store import Store
from tests.conftest import KERNELS

observe_mod = importlib.import_module("argusdb.observe")


def fake_runner(calls: list[dict[str, Any]]) -> types.ModuleType:
    mod = types.ModuleType("argusdb.runner")

    def execute(plan: dict[str, Any], store: Store, source_path: Path, workdir: Path,
                progress: bool) -> list[dict[str, Any]]:
        calls.append({"plan": plan, "source": source_path, "workdir": workdir})
        for t in plan["tasks"]:
            store.insert_row("task", {
                "task_id": t["id"], "kind": t["kind"], "plan_id": plan["plan_id"], "config": t,
                "status": "reused" if t["reuse"] else "done",
                "wall_s": 0.0 if t["reuse"] else 1.5, "gpu_s": None})
        return []

    mod.execute = execute  # type: ignore[attr-defined]
    return mod


def test_observe_returns_evidence_and_report(monkeypatch: pytest.MonkeyPatch,
                                             demo_store: Store, tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(observe_mod, "has_gpu", lambda: True)
    monkeypatch.setitem(sys.modules, "argusdb.runner", fake_runner(calls))
    obs = argusdb.observe("softmax/softmax_fwd", ["duration"], store=demo_store,
                          source=KERNELS / "softmax.py", workdir=tmp_path / "work")
    assert len(calls) == 1 and calls[0]["plan"]["plan_id"] == obs.plan.plan_id
    assert calls[0]["workdir"] == tmp_path / "work"
    # The recorded cupti trace: 20 launches of softmax_fwd (setup kernels are not the region).
    assert obs.evidence is not None and obs.evidence.num_rows == 20
    assert set(obs.evidence.column("region_id").to_pylist()) == {"softmax/softmax_fwd"}
    # Median of the 20 recorded launches of softmax_fwd, ns.
    assert float(np.median(obs.evidence.column("value").to_numpy())) == 32544.0
    rep = obs.report
    assert rep["evidence"] == {"duration": {"observed": 20}}
    assert [(t["action"], t["status"]) for t in rep["tasks"]] == [("find_launch", "done"),
                                                                  ("cupti_timing", "reused")]
    assert rep["wall_s"] == 1.5
    stored = demo_store.rows("SELECT region_id, n_tasks, n_reused FROM plan WHERE plan_id = ?",
                             [obs.plan.plan_id])
    assert stored == [{"region_id": "softmax/softmax_fwd", "n_tasks": 2, "n_reused": 1}]
    cost = demo_store.rows("SELECT tasks, reused, wall_s FROM plan_cost WHERE plan_id = ?",
                           [obs.plan.plan_id])
    assert cost == [{"tasks": 2, "reused": 1, "wall_s": 1.5}]
