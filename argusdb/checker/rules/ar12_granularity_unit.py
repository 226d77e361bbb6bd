"""AR12 evidence.granularity: values of different granularity or unit are not summed together."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class GranularityUnit(Rule):
    """An aggregate or window must not put together values of different granularity (a
    kernel-wide total, per-instruction rows, per-line rows, attributed per-region sums) or of
    different units, unless a key keeps them apart.

    Nsight Compute's raw page gives ``inst_executed`` as a kernel total (unit ``inst``) and its
    source page per instruction (unit ``count``): summed together they count every instruction
    twice. ``sum(value)`` over one run adds nanoseconds to bytes. Granularity and unit are part
    of a value's identity, like its program version. Values of two joined streams (or two
    scalar subqueries) that are added, subtracted or compared must be in one unit too
    (``a.value - b.value`` of a duration and a byte count); a ratio is a quantity of its own.
    Keys that separate them: ``pc`` or
    ``source_line`` (granularity), ``unit`` or ``signal`` (unit), ``evidence_class``
    (attributed region sums vs the observed rows they come from).

    Anti-pattern::

        SELECT program_version, sum(value) FROM evidence
        WHERE signal = 'inst_executed' AND evidence_class = 'observed' GROUP BY ALL

    Best practice::

        SELECT program_version, sum(value) FROM evidence
        WHERE signal = 'inst_executed' AND evidence_class = 'observed' AND pc IS NOT NULL
        GROUP BY ALL          -- per-instruction rows only (or: unit = 'inst' for the total)
    """

    code = "AR12"
    name = "evidence.granularity"
    phase = "compat"

    def check(self, ctx: Context) -> list[Finding]:
        out = []
        for c in ctx.mixing("granularity"):
            if c.kind == "join":
                continue
            gs = sorted(c.props.granularities)
            out.append(self.finding(
                ctx, c.node,
                f"{c.what()} puts together values of different granularity ({', '.join(gs)}): "
                f"a kernel total and the rows it is made of would be counted twice",
                "keep one granularity: per instruction (WHERE pc IS NOT NULL), per line "
                "(source_line IS NOT NULL AND pc IS NULL), kernel-wide (pc IS NULL AND "
                "source_line IS NULL AND evidence_class = 'observed') or attributed region sums "
                "(evidence_class = 'attributed'); or group by pc/source_line/evidence_class",
                granularities=gs))
        for c in ctx.mixing("unit"):
            if c.kind == "join" and c.only is None:
                continue  # a join is judged where its values are added or compared
            us = sorted(c.props.units)
            shown = ", ".join(us[:6]) + (f" and {len(us) - 6} more" if len(us) > 6 else "")
            out.append(self.finding(
                ctx, c.node,
                f"{c.what()} puts together values in {len(us)} different units ({shown})",
                "filter or group by signal (one signal has one unit per version) or by unit, "
                "e.g. WHERE signal = 'duration' or GROUP BY signal, unit",
                units=us))
        return out
