"""AR04 class.mix: derived values are not measurements; mixing them must be said."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule


class ClassMix(MixingRule):
    """Derived evidence must not be combined with observed or attributed evidence silently.

    A *derived* value (e.g. exposed latency inferred from a forced-wait variant) holds only
    under its conditions; an *observed* or *attributed* one is a measurement or a share of
    one. The rule refuses a join, aggregate or window that combines derived with observed or
    attributed rows unless a key keeps the classes apart (``evidence_class``) or the query
    acknowledges the mix with ``evidence_accepting('class_mix')``.

    Anti-pattern::

        SELECT region_id, sum(value) FROM evidence
        WHERE signal = 'exposed_latency' GROUP BY region_id, program_version

    Best practice::

        SELECT region_id, evidence_class, sum(value) FROM evidence
        WHERE signal = 'exposed_latency' GROUP BY region_id, program_version, evidence_class
        -- or, on purpose:
        SELECT region_id, sum(value) FROM evidence_accepting('class_mix')
        WHERE signal = 'exposed_latency' GROUP BY region_id, program_version
    """

    code = "AR04"
    name = "class.mix"
    properties = (("class", "classes", "evidence_classes"),)
    acknowledged_by = "class_mix"

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        return (f"{c.what()} combines {' and '.join(values)} evidence without acknowledging "
                f"the class",
                "group or join by evidence_class, filter one class (WHERE evidence_class = "
                "'observed'), or acknowledge the mix: FROM evidence_accepting('class_mix')")
