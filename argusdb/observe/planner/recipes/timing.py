"""Recipe for ``duration``: clean activity timing of the kernel, or Proton scopes inside it.

- a kernel at kernel scope: ``cupti_timing`` of the parent (activity tracing only);
- a region, or any intra-kernel scope (CTA, warp, SM): a ``proton_scopes`` variant with
  enter/exit scopes at the region markers, a ``proton_instr`` run of it, and the parent's clean
  timing as the reference for what instrumentation costs. In the command form the program runs
  unmodified with the variant in place of its kernel, one launch instrumented
  (:mod:`argusdb.observe.launch.hooks`, ``proton`` mode).

Example:
    >>> FAMILY
    'timing'
"""

from __future__ import annotations

from argusdb.collectors.regions import parse_regions
from argusdb.errors import PlanError
from argusdb.observe.planner.recipes.context import PlanContext, fmt_scope
from argusdb.schema.signals import Signal

FAMILY = "timing"


def add(ctx: PlanContext, signals: list[Signal]) -> None:
    """Add the tasks that time ``ctx.region`` at ``ctx.scope``."""
    region, kernel = ctx.region, ctx.kernel
    if region.is_kernel and not ctx.intra:
        ctx.clean_timing("duration of every measured launch")
        return
    # Proton scopes sit at region markers: a kernel is timed through its regions.
    targets = [region] if not region.is_kernel else [
        r for r in parse_regions(ctx.src) if r.kernel == kernel and r.name
        and r.name != "_entry"]
    at = fmt_scope(ctx.scope)
    if not targets:
        raise PlanError(f"{ctx.src.name}: kernel {kernel} has no '# region' markers, so "
                        f"Proton scopes have nowhere to go for scope {at}; mark its regions "
                        f"first")
    ids = [r.region_id for r in targets]
    label = ctx.variant("proton_scopes", {"region_ids": ids})
    what = (f"region {region.name}" if not region.is_kernel
            else f"kernel {kernel} (through its regions {', '.join(ids)})")
    scopes = ctx.add("proton_scopes", "transform", "proton_scopes",
                     f"{what} has no clean duration of its own{' at ' + at if at else ''}: "
                     f"make a variant with Proton enter/exit scopes at the region markers "
                     f"(per-CTA, per-warp events); checked to compute the parent's result",
                     {"region_ids": ids, "transform": label}, [ctx.root()])
    ctx.add("proton_instr", "collect", "proton_instr",
            f"intra-kernel timing of {what} at {at or 'every launch'} from the instrumented "
            f"variant, in cycles per scope (scope_cycles; the evidence carries the "
            f"instrumentation in its signature)",
            {"version": scopes.id, "scope": ctx.scope, "signals": ["scope_cycles"]},
            [ctx.root(), scopes])
    ctx.clean_timing("reference for the overhead of the instrumented run")
