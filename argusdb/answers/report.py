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
  the conditions it records, with no direct measurement behind it), or any gap of
  :mod:`argusdb.answers.sufficiency`: more than ``max_unattributed`` (default 5 %) of the
  kernel's total in ``_unattributed``, library code without call sites, or a scope the plan
  asked for that came back ``'all'``. The claim shows the ``_unattributed`` share and its gaps.

A report that finds no evidence answers nothing: :class:`~argusdb.errors.NoEvidence` (exit 3)
names the ``argus observe`` request that would produce it; signals asked for but absent while
others are present are listed under ``missing`` with their requests.

Example:
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     rep = report(db, "softmax/softmax_fwd")
    >>> ("duration", "sufficient") in [(c.signal, c.verdict) for c in rep.claims]
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from argusdb.answers import format as fmt
from argusdb.answers import stats
from argusdb.answers.claims import Claim
from argusdb.answers.select import (
    VersionRef,
    cohorts,
    fetch_tables,
    lit,
    resolve_versions,
    version_cohorts,
    versions_of_region,
)
from argusdb.answers.sufficiency import (
    MAX_ENTROPY_BITS,
    MAX_UNATTRIBUTED_SHARE,
    Coverage,
    insufficient_reason,
    missing,
    observe_request,
)

if TYPE_CHECKING:
    from argusdb.api import Connection



@dataclass
class Report:
    """All claims about one region, with the policy they were judged by."""

    region_id: str
    max_entropy_bits: float
    versions: list[dict[str, Any]] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    max_unattributed_share: float = MAX_UNATTRIBUTED_SHARE
    #: Signals asked for that no version has, each with the observe request that would.
    missing: list[dict[str, str]] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """The answer as an HTML table (Jupyter shows it)."""
        return _report_html(self)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "region_id": self.region_id,
                "policy": {"max_entropy_bits": self.max_entropy_bits,
                           "max_unattributed_share": self.max_unattributed_share,
                           "derived_alone": "insufficient"},
                "complete": not self.missing, "missing": self.missing,
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
           max_entropy_bits: float = MAX_ENTROPY_BITS,
           max_unattributed: float = MAX_UNATTRIBUTED_SHARE) -> Report:
    """Claims about ``region`` in the given versions (default: every version with evidence).

    Raises:
        NoEvidence: no stored row answers (the region, or none of ``signals``, has evidence);
            the error names the ``argus observe`` request that would (exit 3).
        UsageError: no program version declares the region (did-you-mean), or a bad version.
    """
    refs = (resolve_versions(db, versions, region) if versions
            else [VersionRef(v, v) for v in versions_of_region(db, region)])
    if not refs:
        raise missing(db, region, signals)
    rep = Report(region, max_entropy_bits, max_unattributed_share=max_unattributed)
    coverage = Coverage(db, max_unattributed, max_entropy_bits)
    # one question each for the versions' facts, their spans and their rows (with the plans),
    # run at the same time
    wanted = ", ".join(dict.fromkeys(lit(r.program_version) for r in refs))
    where = [f"e.region_id = {lit(region)}", f"e.program_version IN ({wanted})"]
    if signals:
        where.append(f"e.signal IN ({', '.join(lit(s) for s in signals)})")
    rows, (meta_rows, span_rows) = fetch_tables(db, where, plans=True, also=[
        f"SELECT program_version, program, options, target, parent_version, transform "
        f"FROM program_version WHERE program_version IN ({wanted})",
        f"SELECT program_version, start_line, end_line FROM region_span WHERE "
        f"program_version IN ({wanted}) AND region_id = {lit(region)}"])
    metas = {m["program_version"]: m for m in meta_rows.to_pylist()}
    spans = {m.pop("program_version"): m for m in span_rows.to_pylist()}
    coverage.plans_of_rows(rows)
    everything = cohorts(rows)
    for ref in refs:
        meta = metas.get(ref.program_version)
        rep.versions.append({**(meta or {"program_version": ref.program_version}),
                             "label": ref.label, "lines": spans.get(ref.program_version)})
        found = version_cohorts(rows, everything, ref)
        observed = {sig for (_, sig, k) in found if k.evidence_class == "observed"}
        for (_, sig, key), co in sorted(found.items(), key=lambda kv: (
                kv[0][1], kv[0][2].evidence_class, kv[0][2].standing, kv[0][2].scope)):
            s = stats.summarize(co.samples)
            ent = co.association_entropy
            verdict, reason = _judge(key.evidence_class, ent, sig in observed, max_entropy_bits)
            gaps = coverage.gaps(region, ref.program_version, sig, key.evidence_class,
                                 dict(key.scope), co.runs)
            share = (coverage.unattributed_share(region, ref.program_version, sig, co.runs)
                     if key.evidence_class == "attributed" else None)
            if gaps:
                verdict, reason = "insufficient", insufficient_reason(gaps)
            notes = []
            if share:
                notes.append(f"{fmt.percent(share, 1)} of the kernel's {sig} is in "
                             f"_unattributed")
            if ent > 0:
                notes.append(f"association entropy {ent:.3f} bits: the value is a contribution "
                             f"estimate of instructions shared with other regions, split by "
                             f"execution counts (a degree of sharing, not an error bound)")
            for cond in co.conditions:
                # loaded with a derived value only: argusdb.ingest costs ~0.1 s CPU to import
                from argusdb.ingest.variants import footprint_note

                probe = footprint_note(cond)
                if probe:
                    notes.append(probe)
                notes.append("derived under conditions: " + ", ".join(
                    f"{k}={v}" for k, v in sorted(cond.items())
                    if not isinstance(v, dict | list)) if isinstance(cond, dict)
                    else f"derived under conditions {cond}")
            if key.standing not in ("clean", "derived"):
                notes.append(f"perturbed by its measurement ({fmt.signature(key.standing)}): "
                             f"comparable only with values of the same standing")
            if s.n == 1:
                notes.append("a single measurement: no repeat statistics")
            rep.claims.append(Claim(
                region, ref.program_version, sig, co.unit, s.median, key.evidence_class,
                key.standing, co.signature, co.timing_clean, key.scope_text(), s.n, s.median,
                s.q1, s.q3, s.iqr, s.cv, s.ci_low, s.ci_high, co.runs, sorted(co.related_runs),
                sorted(co.tasks), ent, co.conditions, notes, verdict, reason, share,
                [g.to_json() for g in gaps], *_spread(co.samples), sampler=key.sampler))
    if signals:
        have = {c.signal for c in rep.claims}
        absent = [s for s in signals if s not in have]
        if len(absent) == len(signals):
            raise missing(db, region, signals, ", ".join(r.program_version for r in refs)
                          if versions else None)
        source = _source_name(db, refs[0].program_version)
        rep.missing = [{"signal": s, "request": observe_request(region, [s], source=source)}
                       for s in absent]
    return rep


def _spread(samples: list[float]) -> tuple[float, float, float, float]:
    """p10, p90, min and max of a claim's repeats."""
    if len(samples) == 1:
        (v,) = samples
        return v, v, v, v
    x = np.asarray(samples, dtype=float)
    p10, p90 = np.percentile(x, [10, 90])
    return float(p10), float(p90), float(x.min()), float(x.max())


def _source_name(db: Connection, version: str) -> str | None:
    rows = db.query(f"SELECT source_name FROM program_version WHERE program_version = "
                    f"{lit(version)}").to_pylist()
    return str(rows[0]["source_name"]) if rows and rows[0]["source_name"] else None


def _report_html(rep: Report) -> str:
    """The report as a notebook shows it: the summary of :func:`argusdb.answers.summary.html`
    (values in human units, distributions folded, a screen of signals per version)."""
    from argusdb.answers.summary import html as summary_html

    return summary_html(rep)
