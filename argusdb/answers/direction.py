"""Which way is better for a signal: what a change's colour in a report or dashboard means.

A ratio above 1 is a slowdown for a duration and an improvement for a throughput; for a count
of executed instructions it is neither. The table is data: a signal's direction comes from
its name, else from its unit; a signal matched by neither has no direction (a change is shown
as a change, never as good or bad).

Example:
    >>> better("duration", "ns"), better("inst_executed", "inst"), better("x", "cycles")
    ('lower', None, 'lower')
    >>> step_class("duration", "ns", 2.0, True), step_class("duration", "ns", 0.5, True)
    ('worse', 'better')
"""

from __future__ import annotations

import re

#: Signal name patterns → the direction that is better (first match wins).
BY_NAME: tuple[tuple[str, str | None], ...] = (
    (r"^(duration|exposed_latency|scope_cycles)$", "lower"),
    (r"^(warp_stall_samples|pc_stalled_samples)$", "lower"),
    (r"^stall_", "lower"),
    (r"(^|_)(excessive|conflicts?)(_|$)", "lower"),
    (r"^(inst_executed|thread_inst_executed|pc_samples)", None),
    (r"(throughput|per_second|pct_of_peak)", "higher"),
)
#: Units → the direction that is better, for signals no name pattern covers.
BY_UNIT = {"ns": "lower", "us": "lower", "ms": "lower", "s": "lower", "cycles": "lower"}


def better(signal: str, unit: str | None) -> str | None:
    """``'lower'``, ``'higher'`` or None (no direction) for ``signal`` in ``unit``."""
    for pattern, direction in BY_NAME:
        if re.search(pattern, signal):
            return direction
    return BY_UNIT.get(unit or "")


def step_class(signal: str, unit: str | None, ratio: float | None,
               significant: bool | None) -> str:
    """CSS class of a step: ``better``, ``worse``, ``changed`` (no direction) or ``''``
    (not significant)."""
    if not significant or ratio is None or ratio == 1:
        return ""
    direction = better(signal, unit)
    if direction is None:
        return "changed"
    up = ratio > 1
    return "worse" if up == (direction == "lower") else "better"
