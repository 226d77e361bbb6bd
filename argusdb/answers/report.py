"""Reports for agents: per region, every claim with its class, provenance, ambiguity and verdict.

A **claim** is one signal of one region in one program version, from one cohort (same
interference signature, evidence class and scope; see :mod:`argusdb.answers.select`). Its value
is the median over repeats, with ``n``, IQR and CV. Each claim gets a policy verdict:

- ``sufficient``: observed evidence; attributed evidence whose value-weighted association
  entropy is at most ``max_entropy_bits`` (default :data:`MAX_ENTROPY_BITS` = 0.5 bit: at most
  a 90/10 split between two regions, which is 0.47 bit); derived evidence corroborated by an
  observed claim of the same version and signal;
- ``insufficient``: attributed evidence above the entropy threshold (the value is a contribution
  estimate of code that several regions share), or derived evidence alone (an inference under
  the conditions it records, with no direct measurement behind it).

Example:
    >>> rep = report(db, "matmul/matmul_kernel")
    >>> [(c.signal, c.verdict) for c in rep.claims]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from argusdb.answers import stats
from argusdb.answers.select import (
    VersionRef,
    cohorts,
    fetch_rows,
    lit,
    resolve_version,
    versions_of_region,
)
from argusdb.errors import UsageError

if TYPE_CHECKING:
    from argusdb.api import Connection

#: Default entropy threshold (bits) above which an attributed claim is insufficient.
MAX_ENTROPY_BITS = 0.5


@dataclass
class Claim:
    """One signal's value for a region in one version, with everything it rests on."""

    region_id: str
    program_version: str
    signal: str
    unit: str | None
    value: float
    evidence_class: str
    standing: str
    signature: str
    timing_clean: bool
    scope: str
    n: int
    median: float
    q1: float
    q3: float
    iqr: float
    cv: float
    ci_low: float | None
    ci_high: float | None
    runs: list[str]
    related_runs: list[str]
    tasks: list[str]
    association_entropy: float
    conditions: list[Any]
    notes: list[str]
    verdict: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in asdict(self).items()}


@dataclass
class Report:
    """All claims about one region, with the policy they were judged by."""

    region_id: str
    max_entropy_bits: float
    versions: list[dict[str, Any]] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "region_id": self.region_id,
                "policy": {"max_entropy_bits": self.max_entropy_bits,
                           "derived_alone": "insufficient"},
                "versions": self.versions, "claims": [c.to_json() for c in self.claims]}


def _judge(evidence_class: str, entropy: float, corroborated: bool,
           max_entropy: float) -> tuple[str, str]:
    if evidence_class == "observed":
        return "sufficient", "observed directly with region identity"
    if evidence_class == "attributed":
        if entropy > max_entropy:
            return "insufficient", (f"rests on high-entropy attribution: {entropy:.3f} bits > "
                                    f"{max_entropy} bits (code shared between regions)")
        return "sufficient", f"attributed with association entropy {entropy:.3f} bits"
    if corroborated:
        return "sufficient", "derived, and corroborated by an observed value of the same signal"
    return "insufficient", "rests on derived evidence alone (an inference under its conditions)"


def report(db: Connection, region: str, versions: list[str] | None = None, *,
           signals: list[str] | None = None,
           max_entropy_bits: float = MAX_ENTROPY_BITS) -> Report:
    """Claims about ``region`` in the given versions (default: every version with evidence).

    Raises:
        UsageError: the region has no evidence in the store (or in the named versions).
    """
    refs = ([resolve_version(db, v, region) for v in versions] if versions
            else [VersionRef(v, v) for v in versions_of_region(db, region)])
    if not refs:
        raise UsageError(f"region {region!r} has no evidence in this store; list regions with "
                         f"'argus query STORE \"SELECT DISTINCT region_id FROM evidence\"'")
    rep = Report(region, max_entropy_bits)
    for ref in refs:
        meta = db.query(f"SELECT program_version, program, options, target, parent_version, "
                        f"transform FROM program_version WHERE program_version = "
                        f"{lit(ref.program_version)}").to_pylist()
        span = db.query(f"SELECT start_line, end_line FROM region_span WHERE program_version = "
                        f"{lit(ref.program_version)} AND region_id = {lit(region)}").to_pylist()
        rep.versions.append({**(meta[0] if meta else {"program_version": ref.program_version}),
                             "label": ref.label, "lines": span[0] if span else None})
        found = cohorts(fetch_rows(db, region, ref, signals))
        observed = {sig for (_, sig, k) in found if k.evidence_class == "observed"}
        for (_, sig, key), co in sorted(found.items(), key=lambda kv: (
                kv[0][1], kv[0][2].evidence_class, kv[0][2].standing, kv[0][2].scope)):
            s = stats.summarize(co.samples)
            ent = co.association_entropy
            verdict, reason = _judge(key.evidence_class, ent, sig in observed, max_entropy_bits)
            notes = []
            if ent > 0:
                notes.append(f"association entropy {ent:.3f} bits: the value is a contribution "
                             f"estimate of instructions shared with other regions, split by "
                             f"execution counts (a degree of sharing, not an error bound)")
            for cond in co.conditions:
                notes.append("derived under conditions: " + ", ".join(
                    f"{k}={v}" for k, v in sorted(cond.items())
                    if not isinstance(v, dict | list)) if isinstance(cond, dict)
                    else f"derived under conditions {cond}")
            if key.standing not in ("clean", "derived"):
                notes.append(f"perturbed by its measurement ({key.standing}): comparable only "
                             f"with values of the same standing")
            if s.n == 1:
                notes.append("a single measurement: no repeat statistics")
            rep.claims.append(Claim(
                region, ref.program_version, sig, co.unit, s.median, key.evidence_class,
                key.standing, co.signature, co.timing_clean, key.scope_text(), s.n, s.median,
                s.q1, s.q3, s.iqr, s.cv, s.ci_low, s.ci_high, co.runs, sorted(co.related_runs),
                sorted(co.tasks), ent, co.conditions, notes, verdict, reason))
    return rep
