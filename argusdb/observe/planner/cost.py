"""Cost estimates of tasks from the costs the runner recorded for past tasks.

The runner writes every task's ``wall_s`` and ``gpu_s`` to the ``task`` table with its plan and
its configuration (the plan's task, so ``config.action`` names the action). The estimate of a
new task is the median over past finished tasks of the same action (views ``plan_cost`` and
``plan_cost_action`` of ``argusdb/queries/plan_cost.sql`` show the same costs per plan).

Example:
    >>> from argusdb.store.embedded import Store
    >>> with open_store("argus.duckdb", read_only=True) as store:
    ...     estimates(store)   # the demo store ran no planned task
    {}
"""

from __future__ import annotations

from typing import Any

from argusdb.store.embedded import Store


def estimates(store: Store) -> dict[str, dict[str, Any]]:
    """Median cost per action over finished plan tasks in the store."""
    rows = store.rows(
        "SELECT action, median(wall_s) AS wall_s, median(gpu_s) AS gpu_s, count(*) AS n "
        "FROM plan_cost_task WHERE status = 'done' AND wall_s IS NOT NULL "
        "GROUP BY action ORDER BY action")
    return {r["action"]: {"wall_s": r["wall_s"], "gpu_s": r["gpu_s"], "from_tasks": r["n"]}
            for r in rows}
