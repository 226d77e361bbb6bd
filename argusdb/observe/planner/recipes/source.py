"""Recipe for source-page signals (``inst_executed``, ``warp_stall_samples``, stall reasons).

One Nsight Compute run with the section list recorded on the H200 (SourceCounters and four
more; its pass count is observed, see :mod:`argusdb.observe.planner.ncu_passes`); ``attribute`` then
maps its per-SASS-instruction values onto the region.

Example:
    >>> SECTIONS[3]
    'SourceCounters'
"""

from __future__ import annotations

from argusdb.observe.planner import ncu_passes
from argusdb.observe.planner.recipes.context import PlanContext
from argusdb.schema.signals import Signal

FAMILY = "source"

#: Nsight Compute sections of a source-page run: those recorded on the H200 by tools/h200/record.py,
#: whose pass count is observed (data/ncu_passes.json).
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "SourceCounters", "WarpStateStats")


def add(ctx: PlanContext, signals: list[Signal]) -> None:
    """Add one source-page run for ``signals``; ``attribute`` maps it."""
    names = [s.name for s in signals]
    seen = ncu_passes.observed(list(SECTIONS), ctx.kernel)
    passes = (seen.describe(ctx.kernel) if seen else "pass count of this section list not "
              "observed yet")
    ctx.mapped.append(ctx.add(
        "ncu_source", "collect", "ncu_source",
        f"per-SASS-instruction {', '.join(names)} from the Nsight Compute source page "
        f"(SourceCounters: instruction counts by SASS patching, stall samples by PC "
        f"sampling), with the sections recorded on the H200: {passes}",
        {"version": "parent", "sections": list(SECTIONS), "metrics": [], "signals": names,
         "launch": ctx.launch, "clock_control": "none",
         "expected_passes": seen.passes if seen else None,
         "passes_from": seen.source if seen else None}, [ctx.root()]))
