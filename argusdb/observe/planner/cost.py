"""Cost estimates of tasks from the costs the runner recorded for past tasks.

The runner writes every task's ``wall_s`` and ``gpu_s`` to the ``task`` table with its plan and
its configuration (the plan's task, so ``config.action`` names the action). The estimate of a
new task is the median over past finished tasks of the same action and path (on replays of a
captured launch, read from the control run, or neither: :func:`key`; views ``plan_cost`` and
``plan_cost_action`` of ``argusdb/queries/plan_cost.sql`` show the same costs per plan). A
command plan's task with no such past task gets the median recorded on the H200
(:data:`SHIPPED_H200`), labelled as such.

Example:
    >>> from argusdb.store.embedded import Store
    >>> with open_store("argus.duckdb", read_only=True) as store:
    ...     estimates(store)   # the demo store ran no planned task
    {}
"""

from __future__ import annotations

from typing import Any

from argusdb.store.embedded import Store

#: Wall and GPU seconds per task of ``argus observe ... -- python3 model.py`` (one region of
#: tests/data/programs/model) on the H200 by the per-run path, from the recorded reports
#: tests/data/gpu/programs/reports/model.json (find_launch, cupti_timing, ncu_source),
#: model_proton.json (proton_instr) and model_pcs.json (proton_pcsampling).
SHIPPED_H200: dict[str, dict[str, Any]] = {
    "find_launch": {"wall_s": 10.85, "gpu_s": 10.44},
    "cupti_timing": {"wall_s": 7.66, "gpu_s": 7.5},
    "ncu_source": {"wall_s": 12.56, "gpu_s": 10.11},
    "proton_instr": {"wall_s": 6.57, "gpu_s": 5.69},
    "proton_pcsampling": {"wall_s": 7.75, "gpu_s": 7.56},
    "forced_wait": {"wall_s": 0.03, "gpu_s": None},
    "attribute": {"wall_s": 0.02, "gpu_s": None},
    "derive_exposed_latency": {"wall_s": 0.02, "gpu_s": None},
}


def key(action: str, replay: bool = False, from_control: bool = False) -> str:
    """The estimate key of a task: its action, ``@replay`` on replays of a captured launch,
    ``@control`` when it reads the control run."""
    return action + ("@replay" if replay else "@control" if from_control else "")


def shipped(task_key: str) -> dict[str, Any] | None:
    """The shipped H200 median of ``task_key`` (:data:`SHIPPED_H200`), labelled, or None."""
    got = SHIPPED_H200.get(task_key)
    return None if got is None else {**got, "from_tasks": 0, "basis": "shipped H200 median"}


def estimates(store: Store) -> dict[str, dict[str, Any]]:
    """Median cost per :func:`key` over finished plan tasks in the store."""
    rows = store.rows(
        "SELECT action, replayed, from_control, median(wall_s) AS wall_s, "
        "median(gpu_s) AS gpu_s, count(*) AS n FROM plan_cost_task WHERE status = 'done' "
        "AND wall_s IS NOT NULL GROUP BY ALL ORDER BY ALL")
    return {key(r["action"], bool(r["replayed"]), bool(r["from_control"])): {
        "wall_s": r["wall_s"], "gpu_s": r["gpu_s"], "from_tasks": r["n"],
        "basis": "median of past tasks in the store"} for r in rows}
