"""AR14 clock.domain: do not compare or subtract timestamps taken on different clocks."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule, shown


class ClockDomain(MixingRule):
    """Timestamps of different clock domains must not be compared, subtracted or overlapped.

    Every interval's raw ``start_ns`` / ``end_ns`` are on the clock of one process (the run,
    of its rank) and one clock kind (``interval_event.clock_domain``: the tracer's timeline,
    CUDA events, an intra-kernel scope's nominal clock). Two ranks' clocks differ by an offset
    (milliseconds on the recorded 2-H200 launches), so a "skew" or an "overlap" computed from
    two runs' raw timestamps measures the offset, not the program. A join whose conditions or
    expressions put two streams' timestamps together as points in time (``a.start_ns <
    b.end_ns``, ``least(a.end_ns, b.end_ns) - greatest(a.start_ns, b.start_ns)``), and an
    aggregate that reads timestamps as points (``max(end_ns) - min(start_ns)``), are refused
    when the rows are of more than one clock domain, unless a key keeps the clocks apart
    (``run_id``, ``clock_domain``). The aligned columns (``aligned_start_ns``,
    ``aligned_end_ns``: the launch group's reference clock, ``aligned_domain``) compare ranks
    of one launch group; across launch groups they are refused too (each has its own
    reference). Durations (``end_ns - start_ns`` of one interval, ``dur_ns``) are on no clock.

    Anti-pattern::

        SELECT a.rank, b.rank, a.start_ns - b.start_ns AS skew
        FROM interval_event a JOIN interval_event b ON a.launch_group = b.launch_group
          AND a.kind = 'collective' AND b.kind = 'collective' AND a.ordinal = b.ordinal
        WHERE a.rank = 0 AND b.rank = 1          -- two processes' clocks

    Best practice::

        SELECT a.rank, b.rank, a.aligned_start_ns - b.aligned_start_ns AS skew
        FROM interval_event a JOIN interval_event b ON a.launch_group = b.launch_group
          AND a.kind = 'collective' AND b.kind = 'collective' AND a.ordinal = b.ordinal
        WHERE a.rank = 0 AND b.rank = 1 AND a.launch_group = 'xl-overlap-events-1'
    """

    code = "AR14"
    name = "clock.domain"
    properties = (("clock", "clocks", "clock_domains"),
                  ("aligned_clock", "aligned_clocks", "clock_domains"))

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        which = "raw"
        remedy = ("compare aligned_start_ns / aligned_end_ns (interval_event: the launch "
                  "group's reference clock, clock_alignment) within one launch group, keep one "
                  "process's clock (join or group by run_id or clock_domain), or use "
                  "interval_span_join_ranks / collective_instance, which pair ranks on the "
                  "aligned clock")
        if prop == "aligned_clock":
            which = "aligned"
            remedy = ("keep one launch group (join or group by launch_group or "
                      "aligned_domain): each launch group's aligned clock is its own "
                      "reference rank's; compare launches with argus diff")
        return (f"{c.what()} puts {which} timestamps of {len(values)} clock domains together "
                f"({shown(values, 3, '; ')}) as if on one clock", remedy)
