"""AR01 version.mixed: do not combine evidence of different program versions as one program."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule, shown
from argusdb.schema.sqltext import literal


class VersionMixed(MixingRule):
    """Aggregates, windows and joins must not put values of two program versions together.

    A median over two versions of a kernel describes neither. The rule refuses an aggregate,
    window or join whose rows come from more than one program version unless a key keeps the
    versions apart (GROUP BY / PARTITION BY / join on ``program_version`` or ``run_id``); the
    store decides which versions the query's own predicates select, so a question that
    touches one version only is accepted. Versions are compared with ``version_diff``.

    Anti-pattern::

        SELECT region_id, median(value) FROM evidence
        WHERE signal = 'duration' GROUP BY region_id      -- softmax v1 and v2 in one median

    Best practice::

        SELECT region_id, program_version, median(value) FROM evidence
        WHERE signal = 'duration' GROUP BY region_id, program_version
        -- or, to compare them:
        SELECT * FROM version_diff('duration', 'ee0369be2e320607', '0e23139fd1d85fdf')
    """

    code = "AR01"
    name = "version.mixed"
    properties = (("version", "versions", "program_versions"),)

    def judged(self, prop: str, c: Combination) -> bool:
        return not c.diffs_versions

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        sigs = sorted(c.props.signals)
        each = f" (one per signal: {', '.join(sigs[:4])}{', ...' if len(sigs) > 4 else ''})"
        compare = (f"compare versions region by region with version_diff("
                   f"{literal(sigs[0] if sigs else 'duration')}, {literal(values[0])}, "
                   f"{literal(values[1])})"
                   f"{each if len(sigs) > 1 else ''}")
        if c.intervals:  # intervals of two versions never share a timeline
            compare = ("compare the versions' steps and collectives with argus diff "
                       "(ratio and confidence interval per step and collective)")
        return (f"{c.what()} combines evidence of {len(values)} program versions "
                f"({shown(values, 4)}) as if from one program",
                f"group or partition by program_version (or run_id), filter one version "
                f"(WHERE program_version = {literal(values[0])}), or {compare}")
