"""Trajectories: each region's evolution along an ordered series of program versions.

A trajectory follows a region by its **region ID**, never by line numbers or kernel names: a
version whose region moved to other lines is the same region (its line span per version is
shown next to each point). Each point is the median of the version's repeats with a bootstrap
CI of the median; each step to the next version carries the diff verdict of
:mod:`argusdb.answers.diff` (ratio, CI, significance against the noise floor). A point whose
evidence has a gap (:mod:`argusdb.answers.sufficiency`) is ``insufficient`` with its
``_unattributed`` share and gaps, and a step to or from it is never significant. A trajectory
with no evidence at all raises :class:`~argusdb.errors.NoEvidence` (exit 3).

Example:
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     t = trajectory(db, ["matmul/matmul_kernel"], ["config=bk64_s3", "config=bk32_s1"])
    >>> len(t.series[0].points)
    2
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from argusdb.answers import notebook, stats
from argusdb.answers.diff import ALPHA, MIN_EFFECT, NoiseModel, _verdict
from argusdb.answers.direction import step_class
from argusdb.answers.select import (
    CohortKey,
    VersionRef,
    cohorts,
    fetch_tables,
    lit,
    resolve_version,
    version_cohorts,
)
from argusdb.answers.sufficiency import (
    MAX_UNATTRIBUTED_SHARE,
    Coverage,
    insufficient_reason,
    missing,
    observe_request,
)
from argusdb.errors import NoEvidence, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

    from argusdb.api import Connection


@dataclass
class Point:
    """One version on a region's trajectory (step fields compare with the previous point)."""

    program_version: str
    label: str
    n: int | None = None
    median: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    start_line: int | None = None
    end_line: int | None = None
    runs: list[str] = field(default_factory=list)
    step_ratio: float | None = None
    step_ci_low: float | None = None
    step_ci_high: float | None = None
    step_p_value: float | None = None
    step_significant: bool | None = None
    step_verdict: str | None = None
    ratio_to_first: float | None = None
    #: 'sufficient' or 'insufficient' (a gap of the point's evidence); None without a value.
    sufficiency: str | None = None
    #: Share (0..1) of the kernel's total in ``_unattributed`` (attributed points), else None.
    unattributed_share: float | None = None
    #: Gaps of the point's evidence (message, remedy, share).
    gaps: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Series:
    """A region's values of one signal and cohort along the versions."""

    region_id: str
    signal: str
    unit: str | None
    key: CohortKey
    points: list[Point]

    def to_json(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and math.isnan(v) else v

        return {"region_id": self.region_id, "signal": self.signal, "unit": self.unit,
                **self.key.to_json(),
                "points": [{k: clean(v) for k, v in asdict(p).items()} for p in self.points]}


@dataclass
class Trajectory:
    """Series per (region, signal, cohort) along ``versions``."""

    versions: list[VersionRef]
    series: list[Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """The answer as an HTML table (Jupyter shows it)."""
        return _trajectory_html(self)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True,
                "versions": [{"label": v.label, "program_version": v.program_version,
                              "runs": list(v.runs)} for v in self.versions],
                "series": [s.to_json() for s in self.series], "notes": self.notes}


def _spans_question(versions: list[str]) -> str:
    """The question of the versions' region spans (one for all of them)."""
    return (f"SELECT program_version, region_id, start_line, end_line FROM region_span "
            f"WHERE program_version IN ({', '.join(dict.fromkeys(map(lit, versions)))})")


def _spans(answer: pa.Table, versions: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """Each version's spans by region, from the answer to :func:`_spans_question`."""
    spans: dict[str, dict[str, tuple[int, int]]] = {v: {} for v in versions}
    for r in answer.to_pylist():
        spans[r["program_version"]][r["region_id"]] = (int(r["start_line"]),
                                                        int(r["end_line"]))
    return spans


def _regions_with_evidence(db: Connection, version: str) -> list[str]:
    rows = db.query(f"SELECT DISTINCT region_id FROM evidence WHERE program_version = "
                    f"{lit(version)} AND region_id IS NOT NULL ORDER BY region_id").to_pylist()
    return [str(r["region_id"]) for r in rows]


def trajectory(db: Connection, regions: list[str] | None, versions: list[str | VersionRef],
               signals: list[str] | None = None, *, min_effect: float = MIN_EFFECT,
               alpha: float = ALPHA,
               max_unattributed: float = MAX_UNATTRIBUTED_SHARE) -> Trajectory:
    """Each region's evolution along ``versions`` (in the given order).

    Args:
        regions: region IDs; default every region with evidence in any of the versions.
        versions: at least two version selectors, in trajectory order.
        signals: signals to follow; default all.

    Raises:
        UsageError: fewer than two versions or an unknown version.
        NoEvidence: none of the regions has evidence of the signals in any version.
    """
    if len(versions) < 2:
        raise UsageError("a trajectory needs at least two versions, e.g. --versions V1,V2,V3")
    hint = regions[0] if regions else None
    refs = [v if isinstance(v, VersionRef) else resolve_version(db, v, hint) for v in versions]
    if not regions:
        regions = sorted({r for ref in refs
                          for r in _regions_with_evidence(db, ref.program_version)})
    traj = Trajectory(refs)
    versions_asked = [ref.program_version for ref in refs]
    spans: dict[str, dict[str, tuple[int, int]]] | None = None
    coverage = Coverage(db, max_unattributed)
    for region in regions:
        # One read of the region (every version: the noise floor needs them all), split here;
        # the versions' spans are read beside the first region's rows.
        preds = [f"e.region_id = {lit(region)}"]
        if signals:
            preds.append(f"e.signal IN ({', '.join(lit(s) for s in signals)})")
        region_rows, answers = fetch_tables(
            db, preds, also=[_spans_question(versions_asked)] if spans is None else [])
        if spans is None:
            spans = _spans(answers[0], versions_asked)
        found = cohorts(region_rows)
        per_version = [version_cohorts(region_rows, found, ref) for ref in refs]
        keys = sorted({(sig, k) for cs in per_version for (_, sig, k) in cs},
                      key=lambda x: (x[0], x[1].standing, x[1].evidence_class, x[1].scope))
        if not keys:
            traj.notes.append(f"{region}: no evidence in any of the versions")
            continue
        noise = NoiseModel(db, region, min_effect, region_rows, found)
        for ref in refs:
            if region not in spans[ref.program_version]:
                traj.notes.append(f"{region}: version {ref.program_version} does not declare "
                                  f"this region (renamed or removed)")
        for sig, key in keys:
            points: list[Point] = []
            prev: list[float] | None = None
            prev_ok = True
            first: float | None = None
            unit = None
            for ref, cs in zip(refs, per_version, strict=True):
                span = spans[ref.program_version].get(region)
                p = Point(ref.program_version, ref.label,
                          start_line=span[0] if span else None, end_line=span[1] if span else None)
                co = cs.get((ref.program_version, sig, key))
                if co is None:
                    points.append(p)
                    prev = None
                    continue
                gaps = coverage.gaps(region, ref.program_version, sig, key.evidence_class,
                                     dict(key.scope), co.runs, co.association_entropy)
                p.sufficiency = "insufficient" if gaps else "sufficient"
                p.gaps = [g.to_json() for g in gaps]
                if key.evidence_class == "attributed":
                    p.unattributed_share = coverage.unattributed_share(
                        region, ref.program_version, sig, co.runs)
                unit = co.unit
                s = stats.summarize(co.samples)
                p.n, p.median, p.ci_low, p.ci_high, p.runs = (s.n, s.median, s.ci_low,
                                                              s.ci_high, co.runs)
                if first is None:
                    first = s.median
                p.ratio_to_first = s.median / first if first else None
                if prev is not None:
                    t = stats.ratio_test(prev, co.samples)
                    floor, _ = noise.floor(sig, key)
                    p.step_significant, p.step_verdict = _verdict(t, floor, alpha)
                    p.step_ratio, p.step_ci_low, p.step_ci_high, p.step_p_value = (
                        t.ratio, t.ci_low, t.ci_high, t.p_value)
                    if gaps or not prev_ok:
                        why = insufficient_reason(gaps) if gaps else (
                            "the previous point's evidence has a gap")
                        p.step_significant = False
                        p.step_verdict = (f"insufficient: {why} (statistically: "
                                          f"{p.step_verdict})")
                prev, prev_ok = co.samples, not gaps
                points.append(p)
            traj.series.append(Series(region, sig, unit, key, points))
    if not traj.series:
        where = ", ".join(f"{r.program_version} ({r.label})" for r in refs)
        if regions:
            raise missing(db, regions[0], signals, where)
        raise NoEvidence(f"versions {where} have no region evidence",
                         [observe_request("PROGRAM/KERNEL/REGION", signals or ["duration"],
                                          source="SOURCE_FILE")])
    return traj


def human_table(t: Trajectory, *, all_series: bool = False
                ) -> tuple[list[str], list[list[str]], list[bool], int]:
    """The trajectory as a person reads it: columns, formatted cells, right-aligned columns
    and how many series were left out. Values carry their unit; a ``cohort`` column appears
    when one signal of a region has two cohorts; a missing value is one mark. Without
    ``all_series`` only series with values in two or more versions are shown (a series of
    one point has no step)."""
    from argusdb.answers import format as fmt

    shown = [s for s in t.series
             if all_series or sum(p.median is not None for p in s.points) >= 2]
    keys = [(s.region_id, s.signal) for s in shown]
    two = len(set(keys)) < len(keys)
    cols = ["region", "signal", *(["cohort"] if two else []), "version", "lines", "n",
            "median", "95% CI", "step", "step verdict"]
    rows = []
    for s in shown:
        unit = fmt.display_unit(s.signal, s.unit)
        cohort = (f"{s.key.evidence_class}, {fmt.signature(s.key.standing)}"
                  + (f", {s.key.sampler_text()}" if s.key.sampler else "")
                  + (f", {s.key.scope_text()}" if s.key.scope else ""))
        for p in s.points:
            lines = f"{p.start_line}-{p.end_line}" if p.start_line else fmt.MISSING
            ci = (fmt.MISSING if p.ci_low is None or p.ci_high is None
                  else fmt.span(p.ci_low, p.ci_high, unit))
            rows.append([s.region_id, s.signal, *([cohort] if two else []), p.label, lines,
                         fmt.number(p.n), fmt.quantity(p.median, unit), ci,
                         fmt.ratio(p.step_ratio), fmt.text(p.step_verdict)])
    right = [False, False, *([False] if two else []), False, False, True, True, True, True,
             False]
    return cols, rows, right, len(t.series) - len(shown)


def _trajectory_html(t: Trajectory) -> str:
    """One row per (series, version): median, CI and the step from the previous version."""
    cols, rows, right, _ = human_table(t, all_series=True)
    colours = [notebook.COLOURS.get(step_class(s.signal, s.unit, p.step_ratio,
                                               p.step_significant), "")
               for s in t.series for p in s.points]
    return notebook.table(cols, rows, colours, right)
