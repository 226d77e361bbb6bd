"""Recipe for ``exposed_latency``: a forced-wait variant timed like its parent, then derived.

The variant's global loads in the region complete before the next stage starts, so the
latency the pipeline hid becomes visible; both sides are the same collection
(``cupti_timing``) so their difference is the probe alone (``derive_exposed_latency``).

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
        raise PlanError(f"exposed_latency of {rid}: a forced wait needs a region inside a "
                        f"kernel that issues global loads (tl.load); this one is the whole "
                        f"kernel. Pick a load region (see 'argus regions {ctx.src.name}')")
    label = ctx.variant("forced_wait", {"region_id": rid})
    parent = ctx.clean_timing("the parent side of exposed_latency")
    fw = ctx.add("forced_wait", "transform", "forced_wait",
                 f"variant whose global loads in region {region.name} complete before the "
                 f"next stage starts: the latency the pipeline hid becomes visible; checked "
                 f"to compute the parent's result", {"region_id": rid, "transform": label},
                 [ctx.root()])
    variant = ctx.add("cupti_timing.forced_wait", "collect", "cupti_timing",
                      "activity timing of the forced-wait variant, the same collection as "
                      "the parent's timing so the difference is the probe alone",
                      {"version": fw.id, "launches": ctx.measured, "launch": ctx.launch,
                       "signals": ["duration"]}, [ctx.root(), fw])
    ctx.add("derive_exposed_latency", "synthesize", "derive_exposed_latency",
            f"exposed latency of {rid}: variant minus parent duration, per launch, kept only "
            f"where the probe still explains the kernel",
            {"parent_task": parent.id, "variant_task": variant.id, "region_id": rid,
             "signals": ["exposed_latency"]}, [parent, variant])
