"""Measurement cost is queryable (views of argusdb/queries/plan_cost.sql) and feeds estimates."""

from __future__ import annotations

import json

from argusdb.observe.planner import plan
from argusdb.observe.planner.profiler_host import TableCounter
from argusdb.store.embedded import Store
from tests.conftest import KERNELS

#: Task rows as the runner writes them (config is the plan's task) for two plans.
TASKS = [
    ("p-a.find_launch", "control", "p-a", "find_launch", "done", 2.0, None),
    ("p-a.cupti_timing.parent", "collect", "p-a", "cupti_timing", "done", 3.0, 0.5),
    ("p-a.ncu_source", "collect", "p-a", "ncu_source", "done", 40.0, 12.0),
    ("p-b.find_launch", "control", "p-b", "find_launch", "done", 4.0, None),
    ("p-b.cupti_timing.parent", "collect", "p-b", "cupti_timing", "reused", 0.0, None),
    ("p-b.cupti_timing.forced_wait", "collect", "p-b", "cupti_timing", "done", 5.0, 1.5),
    ("t-manual", "collect", None, "cupti_timing", "done", 99.0, None),  # an ingest: no plan
]


def seed(st: Store) -> None:
    for tid, kind, plan_id, action, status, wall, gpu in TASKS:
        st.insert_row("task", {"task_id": tid, "kind": kind, "plan_id": plan_id,
                               "config": {"id": tid, "action": action}, "status": status,
                               "wall_s": wall, "gpu_s": gpu})
    st.insert_row("plan", {"plan_id": "p-a", "source_name": "softmax.py",
                           "region_id": "softmax/softmax_fwd", "signals": ["duration"],
                           "scope": {}, "plan": {}, "n_tasks": 3, "n_reused": 0,
                           "created_at": "2026-11-29 10:00:00"})


def test_plan_cost_per_plan(store: Store) -> None:
    seed(store)
    rows = store.rows("SELECT plan_id, region_id, signals, tasks, reused, skipped, failed, wall_s, "
                      "gpu_s FROM plan_cost ORDER BY plan_id")
    assert [{**r, "signals": r["signals"] and json.loads(r["signals"])} for r in rows] == [
        {"plan_id": "p-a", "region_id": "softmax/softmax_fwd", "signals": ["duration"],
         "tasks": 3, "reused": 0, "skipped": 0, "failed": 0, "wall_s": 45.0, "gpu_s": 12.5},
        {"plan_id": "p-b", "region_id": None, "signals": None, "tasks": 3, "reused": 1,
         "skipped": 0, "failed": 0, "wall_s": 9.0, "gpu_s": 1.5}]


def test_plan_cost_per_action(store: Store) -> None:
    seed(store)
    rows = store.sql("SELECT plan_id, action, tasks, reused, wall_s, gpu_s FROM plan_cost_action "
                     "ORDER BY plan_id, action").fetchall()
    assert rows == [("p-a", "cupti_timing", 1, 0, 3.0, 0.5),
                    ("p-a", "find_launch", 1, 0, 2.0, 0.0),
                    ("p-a", "ncu_source", 1, 0, 40.0, 12.0),
                    ("p-b", "cupti_timing", 2, 1, 5.0, 1.5),
                    ("p-b", "find_launch", 1, 0, 4.0, 0.0)]


def test_plans_carry_estimates_from_past_tasks(store: Store, table: TableCounter) -> None:
    seed(store)
    p = plan(KERNELS / "softmax.py", "softmax/softmax_fwd", ["duration", "inst_executed"],
             store=store, counter=table)
    est = {t.action: t.estimate for t in p.tasks}
    # Medians over finished plan tasks: the reused one and the manual ingest left out.
    basis = {"basis": "median of past tasks in the store"}
    assert est["find_launch"] == {"wall_s": 3.0, "gpu_s": None, "from_tasks": 2} | basis
    assert est["cupti_timing"] == {"wall_s": 4.0, "gpu_s": 1.0, "from_tasks": 2} | basis
    assert est["ncu_source"] == {"wall_s": 40.0, "gpu_s": 12.0, "from_tasks": 1} | basis
    # the harness form has no shipped figures: no history, no estimate
    assert est["attribute"] is None
