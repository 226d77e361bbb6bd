"""The planner: expand ``observe(region, signals, scope)`` into a DAG of tasks.

Example:
    >>> from argusdb.observe.planner import plan
    >>> p = plan("kernels/softmax.py", "softmax/softmax_fwd", ["duration", "inst_executed"])
    >>> [(t.action, t.run) for t in p.tasks]
    [('find_launch', None), ('cupti_timing', 'r1'), ('ncu_source', 'r2'), ('attribute', None)]
"""

from __future__ import annotations

from argusdb.observe.planner.build import plan
from argusdb.observe.planner.plan import Plan, PlanError, Task

__all__ = ["Plan", "PlanError", "Task", "plan"]
