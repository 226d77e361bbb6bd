"""Which cohorts a cross-version comparison may put side by side; refusals in the checker's codes.

A diff compares cohorts (see :mod:`argusdb.answers.select`) of two versions that share a
:class:`~argusdb.answers.select.CohortKey` (standing, evidence class, scope). When a signal has
no such pair, the comparison is refused with the checker's own rules, decided by the checker's
own test (:meth:`argusdb.checker.context.Props.mixed`) on the union of both sides:

- ``AR02 interference.conflict``: the sides' standings differ (a duration under counter replay
  against a clean one);
- ``AR04 class.mix``: derived against observed or attributed evidence;
- ``AR05 scope.nesting``: different scope levels (a warp-role slice against a whole kernel);
- ``AR15 evidence.sampler``: sample counts of different samplers (Nsight Compute's warp-state
  samples against Proton's PC samples of one stall reason).

A diff is like for like, so it is stricter than a query in two places, refused under the same
codes: observed against attributed values (``AR04``), and two slices of one scope level with
different coordinates, e.g. ``warp_role=producer`` against ``warp_role=consumer`` (``AR05``).

Example:
    >>> from argusdb.answers.select import cohorts, fetch_rows, resolve_version
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     a, b = (list(cohorts(fetch_rows(
    ...         db, "matmul/matmul_kernel", resolve_version(db, v, region="matmul/matmul_kernel"),
    ...         ["duration"])).values()) for v in ("config=bk64_s3", "config=bk32_s1"))
    >>> pairs, findings = match_cohorts("duration", a, b)
    >>> len(pairs), findings
    (1, [])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from argusdb.answers.select import Cohort
from argusdb.errors import Finding
from argusdb.schema.signature import readable

if TYPE_CHECKING:  # the checker (sqlglot) loads only to word a refusal
    from argusdb.checker.context import Props


def _finding(code: str, message: str, remedy: str, **extra: object) -> Finding:
    from argusdb.checker.rules import rule

    r = rule(code)
    return Finding(r.code, r.name, message, remedy, extra=dict(extra))


def _props(cs: Sequence[Cohort]) -> Props:
    from argusdb.checker.context import Props

    p = Props()
    for c in cs:
        p.versions.add(c.program_version)
        p.runs.update(c.runs)
        p.signatures.update(c.signatures)
        p.signals.add(c.signal)
        p.classes.add(c.key.evidence_class)
        if c.key.standing != "derived":
            p.standings.add(c.key.standing)
        p.scopes.add(",".join(k for k, _ in c.key.scope) or "kernel")
        if c.key.sampler:
            p.samplers.add(c.key.sampler)
    return p


def _words(values: Sequence[str] | set[str]) -> str:
    """Values of a property for a message: ``clean and replay(38 passes)``."""
    return " and ".join(readable(v) for v in sorted(values)) or "none"


def match_cohorts(signal: str, before: Sequence[Cohort], after: Sequence[Cohort]
                  ) -> tuple[list[tuple[Cohort, Cohort]], list[Finding]]:
    """Pairs of comparable cohorts of one signal; findings when no pair exists.

    Returns:
        ``(pairs, findings)``: findings are empty whenever at least one pair exists (cohorts
        without a partner are left out of the pairs and reported by the caller as unmatched).
    """
    by_key = {c.key: c for c in after}
    pairs = [(c, by_key[c.key]) for c in before if c.key in by_key]
    if pairs or not before or not after:
        return pairs, []
    both = _props(before).merge(_props(after))
    a, b = _props(before), _props(after)
    findings: list[Finding] = []
    if both.mixed("standing") and not a.standings & b.standings:
        findings.append(_finding(
            "AR02",
            f"'{signal}' has standing {_words(a.standings)} in the first version and "
            f"{_words(b.standings)} in the second: values perturbed by a measurement are not "
            f"comparable with clean ones (or with other perturbations)",
            "record both versions under the same collection (e.g. clean activity-trace timing "
            "runs, argus ingest X.cupti.jsonl) and compare those; name a run ID instead of a "
            "version to pick one run", standings=sorted(both.standings)))
    if not a.classes & b.classes:
        findings.append(_finding(
            "AR04",
            f"'{signal}' is {'/'.join(sorted(a.classes))} evidence in the first version and "
            f"{'/'.join(sorted(b.classes))} in the second: "
            + ("a derived value is an inference under conditions, not a measurement"
               if both.mixed("class") else "a diff compares like with like"),
            "derive the value for both versions from the same kind of variant runs, or observe "
            "it in both", evidence_classes=sorted(both.classes)))
    if a.samplers and b.samplers and not a.samplers & b.samplers:
        findings.append(_finding(
            "AR15",
            f"'{signal}' is counted by {_words(a.samplers)} in the first version and by "
            f"{_words(b.samplers)} in the second: each sampler counts at its own interval",
            "collect the signal with the same collector for both versions (NAME for Nsight "
            "Compute's source page, NAME@proton for Proton's PC sampling)",
            samplers=sorted(both.samplers)))
    if not a.scopes & b.scopes or not findings:
        sa = sorted({c.key.scope_text() for c in before})
        sb = sorted({c.key.scope_text() for c in after})
        if sa != sb or not findings:
            findings.append(_finding(
                "AR05",
                f"'{signal}' covers scope {_words(sa)} in the first version and {_words(sb)} "
                f"in the second: "
                f"these scopes do not nest into one comparable value",
                "measure both versions at the same scope, or aggregate the finer one to the "
                "coarser scope in a checked query first", scopes=sorted(both.scopes)))
    return [], findings
