"""Recipe for Nsight Compute metric names (``dram__bytes_read.sum``, ...).

Metrics are packed so that each run's counters come from one replay pass where the pass
counter (CUPTI's profiler host, or the table recorded with it) says they fit on the target's
chip; with no known target every metric gets a run of its own and the plan says why.

Example:
    >>> FAMILY
    'metric'
"""

from __future__ import annotations

from argusdb.observe.planner.interference import pack_metrics
from argusdb.observe.planner.recipes.context import PlanContext
from argusdb.schema.signals import Signal

FAMILY = "metric"


def add(ctx: PlanContext, signals: list[Signal]) -> None:
    """Add one ``ncu_source`` run per group of metrics that share replay passes."""
    names = [s.name for s in signals]
    if ctx.chip is None:
        ctx.notes.append(f"metrics: pass counts are per chip and the target is not known "
                         f"({ctx.target}), so each metric gets a run of its own; give "
                         f"--option target=sm_XX to pack them")
    for i, g in enumerate(pack_metrics(names, ctx.counter, ctx.chip), start=1):
        ctx.add(f"ncu_metrics.{i}", "collect", "ncu_source",
                f"hardware counters {', '.join(g.metrics)} under replay: {g.basis}",
                {"version": "parent", "sections": [], "metrics": g.metrics,
                 "signals": list(g.metrics), "launch": ctx.launch, "clock_control": "none",
                 "expected_passes": g.passes, "passes_from": ctx.counter.name}, [ctx.root()])
