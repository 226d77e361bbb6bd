"""Recipe for ``exposed_latency``: a forced-wait variant timed like its parent, then derived.

The variant's global loads in the region complete before the next stage starts, so the
latency the pipeline hid becomes visible; both sides are the same collection
(``cupti_timing``) so their difference is the probe alone (``derive_exposed_latency``). With
replay both sides are timed on replays of the captured launch (replayed variant minus replayed
parent). A region without a global load, or a whole kernel, gets no tasks: the signal is not
applicable there (``ctx.not_applicable``, with the reason), and the others are planned.

Example:
    >>> FAMILY
    'derived'
"""

from __future__ import annotations

from argusdb.errors import PlanError
from argusdb.observe.planner.recipes.context import PlanContext
from argusdb.schema.signals import Signal

FAMILY = "derived"


def add(ctx: PlanContext, signals: list[Signal]) -> None:
    """Add the forced-wait variant, its timing and the derivation for ``ctx.region``."""
    region, rid = ctx.region, ctx.region.region_id
    if region.is_kernel:
        ctx.not_applicable["exposed_latency"] = (
            f"a forced wait needs a region inside a kernel that issues global loads (tl.load); "
            f"{rid} is the whole kernel. Pick a load region (see 'argus regions "
            f"{ctx.src.name}')")
        return
    try:
        label = ctx.variant("forced_wait", {"region_id": rid})
    except PlanError as exc:
        ctx.not_applicable["exposed_latency"] = str(exc).removeprefix(
            "cannot plan the forced_wait variant: ")
        return
    parent = (ctx.replayed_timing("the parent side of exposed_latency") if ctx.replay
              else ctx.clean_timing("the parent side of exposed_latency"))
    fw = ctx.add("forced_wait", "transform", "forced_wait",
                 f"variant whose global loads in region {region.name} complete before the "
                 f"next stage starts: the latency the pipeline hid becomes visible; checked "
                 f"to compute the parent's result", {"region_id": rid, "transform": label},
                 [ctx.root()])
    variant = ctx.add("cupti_timing.forced_wait", "collect", "cupti_timing",
                      "activity timing of the forced-wait variant, the same collection as "
                      "the parent's timing so the difference is the probe alone"
                      + (" (both on replays of the captured launch)" if ctx.replay else ""),
                      {"version": fw.id, "launches": ctx.measured, "launch": ctx.launch,
                       "signals": ["duration"]}, [ctx.root(), fw])
    ctx.add("derive_exposed_latency", "synthesize", "derive_exposed_latency",
            f"exposed latency of {rid}: variant minus parent duration, per launch, kept only "
            f"where the probe still explains the kernel",
            {"parent_task": parent.id, "variant_task": variant.id, "region_id": rid,
             "signals": ["exposed_latency"]}, [parent, variant])
