"""Which cohorts a cross-version comparison may put side by side, and refusals with rule codes.

A diff compares cohorts (see :mod:`argusdb.answers.select`) of two versions that share a
:class:`~argusdb.answers.select.CohortKey`. When a signal has no such pair, the comparison is
refused with the checker's rule codes for the same mistakes in a query:

- ``AR02 signature.conflict``: the two sides were measured under different interference
  signatures (a duration under counter replay against a clean one);
- ``AR04 class.derived_mixed``: different evidence classes (derived against observed);
- ``AR05 scope.not_nested``: different scopes (a warp-role slice against a whole kernel).

Example:
    >>> pairs, findings = match_cohorts("duration", from_cohorts, to_cohorts)
"""

from __future__ import annotations

from collections.abc import Sequence

from argusdb.answers.select import Cohort
from argusdb.errors import Finding

SIGNATURE = ("AR02", "signature.conflict")
CLASS_MIXED = ("AR04", "class.derived_mixed")
SCOPE = ("AR05", "scope.not_nested")


def _describe(cs: Sequence[Cohort], attr: str) -> list[str]:
    vals = {getattr(c.key, attr) if attr != "scope" else c.key.scope_text() for c in cs}
    return sorted(vals)


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
    findings: list[Finding] = []
    sig_a, sig_b = _describe(before, "signature"), _describe(after, "signature")
    if not set(sig_a) & set(sig_b):
        findings.append(Finding(
            *SIGNATURE,
            f"'{signal}' was measured under {sig_a} in the first version and under {sig_b} in "
            f"the second: timings under different interference are not comparable",
            "record both versions under the same collection (e.g. clean activity-trace timing "
            "runs) and compare those runs; name a run ID instead of a version to pick one"))
    cls_a, cls_b = _describe(before, "evidence_class"), _describe(after, "evidence_class")
    if not set(cls_a) & set(cls_b):
        findings.append(Finding(
            *CLASS_MIXED,
            f"'{signal}' is {'/'.join(cls_a)} evidence in the first version and "
            f"{'/'.join(cls_b)} in the second: a derived value is an inference under "
            f"conditions, not a measurement of the same kind",
            "compare like with like: derive the value for both versions from the same kind of "
            "variant runs, or observe it in both"))
    sc_a, sc_b = _describe(before, "scope"), _describe(after, "scope")
    if not set(sc_a) & set(sc_b):
        findings.append(Finding(
            *SCOPE,
            f"'{signal}' covers scope {sc_a} in the first version and {sc_b} in the second: "
            f"these scopes do not nest into one comparable value",
            "measure both versions at the same scope, or aggregate the finer one to the "
            "coarser scope in a checked query first"))
    if not findings:  # each dimension overlaps somewhere, but never all at once
        findings.append(Finding(
            *SIGNATURE,
            f"no cohort of '{signal}' has the same signature, class and scope in both versions "
            f"(first: {[c.key.to_json() for c in before]}; second: "
            f"{[c.key.to_json() for c in after]})",
            "record both versions under the same collection and scope"))
    return [], findings
