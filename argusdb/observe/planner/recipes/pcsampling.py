"""Recipe for ``NAME@proton``: Proton PC sampling per source line, then ``attribute``.

Example:
    >>> FAMILY
    'pcsampling'
"""

from __future__ import annotations

from argusdb.observe.planner.recipes.context import PlanContext
from argusdb.schema.signals import Signal

FAMILY = "pcsampling"


def add(ctx: PlanContext, signals: list[Signal]) -> None:
    """Add one Proton PC-sampling run; ``attribute`` maps it."""
    names = [s.name for s in signals]
    ctx.mapped.append(ctx.add("proton_pcsampling", "collect", "proton_pcsampling",
                              f"per-source-line {', '.join(names)} from Proton PC sampling",
                              {"version": "parent", "signals": names}, [ctx.root()]))
