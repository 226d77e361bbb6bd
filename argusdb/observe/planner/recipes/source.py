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
#: Sections of a command's source-page run: what its signals need, no more. SourceCounters
#: holds every source-page signal (instruction counts by SASS patching, stall samples by PC
#: sampling); LaunchStats the launch shape the run's kernels are checked by. The other three of
#: :data:`SECTIONS` are kernel-level counters no source-page signal reads, and cost passes.
COMMAND_SECTIONS = ("LaunchStats", "SourceCounters")


def add(ctx: PlanContext, signals: list[Signal]) -> None:
    """Add one source-page run for ``signals``; ``attribute`` maps it."""
    names = [s.name for s in signals]
    sections = list(COMMAND_SECTIONS if ctx.command is not None else SECTIONS)
    seen = ncu_passes.observed(sections, ctx.kernel)
    passes = (seen.describe(ctx.kernel) if seen else "pass count of this section list not "
              "observed yet")
    which = ("the sections these signals need (SourceCounters, and LaunchStats for the "
             "launch shape)" if ctx.command is not None else "the sections recorded on the H200")
    ctx.mapped.append(ctx.add(
        "ncu_source", "collect", "ncu_source",
        f"per-SASS-instruction {', '.join(names)} from the Nsight Compute source page "
        f"(SourceCounters: instruction counts by SASS patching, stall samples by PC "
        f"sampling), with {which}: {passes}",
        {"version": "parent", "sections": sections, "metrics": [], "signals": names,
         "launch": ctx.launch, "clock_control": "none",
         "expected_passes": seen.passes if seen else None,
         "passes_from": seen.source if seen else None}, [ctx.root()]))
