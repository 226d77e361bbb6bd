"""AR12 evidence.granularity: values of different granularity or unit are not summed together."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule, shown


class GranularityUnit(MixingRule):
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
    properties = (("granularity", "granularities", "granularities"), ("unit", "units", "units"))

    def judged(self, prop: str, c: Combination) -> bool:
        # a join is judged where its values are added or compared (units: unless the join
        # is made for them)
        return c.kind != "join" or (prop == "unit" and c.only is not None)

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        if prop == "unit":
            return (f"{c.what()} puts together values in {len(values)} different units "
                    f"({shown(values, 6)})",
                    "filter or group by signal (one signal has one unit per version) or by "
                    "unit, e.g. WHERE signal = 'duration' or GROUP BY signal, unit")
        return (f"{c.what()} puts together values of different granularity "
                f"({', '.join(values)}): a kernel total and the rows it is made of would be "
                f"counted twice",
                "keep one granularity: per instruction (WHERE pc IS NOT NULL), per line "
                "(source_line IS NOT NULL AND pc IS NULL), kernel-wide (pc IS NULL AND "
                "source_line IS NULL AND evidence_class = 'observed') or attributed region "
                "sums (evidence_class = 'attributed'); or group by pc/source_line/"
                "evidence_class")
