"""Planner recipes: one module per signal family, applied in the order of :data:`RECIPES`.

A recipe is a module with ``FAMILY`` (a key of :data:`argusdb.schema.signals.FAMILIES`) and
``add(ctx, signals)``, which adds the tasks that collect its family's signals to the plan
(:class:`~argusdb.observe.planner.recipes.context.PlanContext`). A new family of collection is a new
module and a row here, not an edit of ``plan()``.

======================  ===================================================================
family                  recipe
======================  ===================================================================
timing (``duration``)   :mod:`.timing`: ``cupti_timing`` of the parent, or a
                        ``proton_scopes`` variant + ``proton_instr`` inside a kernel
derived                 :mod:`.derived`: ``forced_wait`` variant + ``cupti_timing`` of both
                        sides + ``derive_exposed_latency``
source                  :mod:`.source`: one ``ncu_source`` run with the recorded sections
metric                  :mod:`.metric`: ``ncu_source`` runs packed by replay passes
pcsampling              :mod:`.pcsampling`: ``proton_pcsampling``
======================  ===================================================================

Example:
    >>> [family for family, _ in RECIPES]
    ['timing', 'derived', 'source', 'metric', 'pcsampling']
"""

from __future__ import annotations

from collections.abc import Callable

from argusdb.observe.planner.recipes import derived, metric, pcsampling, source, timing
from argusdb.observe.planner.recipes.context import PlanContext
from argusdb.schema.signals import Signal

Recipe = Callable[[PlanContext, list[Signal]], None]

#: (family, recipe) in planning order: the order fixes task ids' order and run numbers.
RECIPES: tuple[tuple[str, Recipe], ...] = tuple(
    (m.FAMILY, m.add) for m in (timing, derived, source, metric, pcsampling))
