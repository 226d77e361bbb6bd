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

import html
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from argusdb.answers import notebook, stats
from argusdb.answers.diff import ALPHA, MIN_EFFECT, NoiseModel, _verdict, has_ratio
from argusdb.answers.direction import step_class
from argusdb.answers.names import screen_names
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
    empty: list[str] = []  # regions without evidence in any of the versions
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
            empty.append(region)
            continue
        noise = NoiseModel(db, region, min_effect, region_rows, found)
        undeclared = [ref.program_version for ref in refs
                      if region not in spans[ref.program_version]]
        # _unattributed is no region of any source: it is never declared, so no note
        if undeclared and not region.endswith("/_unattributed"):
            traj.notes.append(
                f"{region}: version{'s' if len(undeclared) > 1 else ''} "
                f"{', '.join(undeclared)} do{'' if len(undeclared) > 1 else 'es'} not declare "
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
                # no ratio across a sign change (see argusdb.answers.diff.has_ratio)
                p.ratio_to_first = s.median / first if has_ratio(first, s.median) else None
                if prev is not None:
                    t = stats.ratio_test(prev, co.samples)
                    floor, _ = noise.floor(sig, key)
                    p.step_significant, p.step_verdict = _verdict(t, floor, alpha, unit)
                    ratio, lo, hi = ((t.ratio, t.ci_low, t.ci_high)
                                     if has_ratio(t.from_median, t.to_median)
                                     else (None, math.nan, math.nan))
                    p.step_ratio, p.step_ci_low, p.step_ci_high, p.step_p_value = (
                        ratio, lo, hi, t.p_value)
                    if gaps or not prev_ok:
                        why = insufficient_reason(gaps) if gaps else (
                            "the previous point's evidence has a gap")
                        p.step_significant = False
                        p.step_verdict = (f"insufficient: {why} (statistically: "
                                          f"{p.step_verdict})")
                prev, prev_ok = co.samples, not gaps
                points.append(p)
            traj.series.append(Series(region, sig, unit, key, points))
    if empty:
        traj.notes.append(f"no evidence in any of the versions: {_named(empty)}")
    if not traj.series:
        where = ", ".join(f"{r.program_version} ({r.label})" for r in refs)
        if regions:
            raise missing(db, regions[0], signals, where)
        raise NoEvidence(f"versions {where} have no region evidence",
                         [observe_request("PROGRAM/KERNEL/REGION", signals or ["duration"],
                                          source="SOURCE_FILE")])
    return traj


def _named(items: list[str], most: int = 4) -> str:
    """``a, b, c and 5 more``: a list a line can hold."""
    head = ", ".join(items[:most])
    return head + (f" and {len(items) - most} more" if len(items) > most else "")


@dataclass
class Screen:
    """The trajectory as a person reads it (:func:`human_table`): columns, formatted cells
    (one row per series and version), right-aligned columns, and what was left out."""

    columns: list[str]
    rows: list[list[str]]
    right: list[bool]
    #: The series shown, in the trajectory's order.
    series: list[Series]
    #: Series left out for the screen (``--all`` shows them).
    more: int = 0
    #: Series with a value in one version only, left out (``--all`` shows them).
    single: int = 0

    def more_line(self) -> str | None:
        """``+ 12 more series, 704 with a value in one version only (--all ...)``, or None
        when every series is shown."""
        if not (self.more or self.single):
            return None
        bits = ([f"{self.more:,} more series"] if self.more else []) + (
            [f"{self.single:,} {'more ' if not self.more else ''}with a value in one version "
             f"only"] if self.single else [])
        return f"+ {', '.join(bits)} (--all: every series; --json: every point)"


def _screen_rank(s: Series) -> tuple[bool, int, bool, float, bool]:
    """Which series a screen shows first: the headline signals (in their order), then those
    with a significant step, the largest step first, then those with a value before zeros."""
    from argusdb.answers.format import HEADLINE

    order = {sig: i for i, sig in enumerate(HEADLINE)}
    steps = [abs(math.log(p.step_ratio)) for p in s.points
             if p.step_ratio and math.isfinite(p.step_ratio) and p.step_ratio > 0]
    significant = any(p.step_significant for p in s.points)
    zero = not any(p.median for p in s.points)
    return (s.signal not in order, order.get(s.signal, 0), not significant,
            -max(steps, default=0.0), zero)


#: Characters of the signal column of a trajectory's screen (longer names are cut).
SIGNAL_WIDTH = 32


def human_table(t: Trajectory, *, all_series: bool = False,
                lines: int | None = None) -> Screen:
    """The trajectory as a person reads it. Values carry their unit; a ``cohort`` column
    appears when one signal of a region has two cohorts; a missing value is one mark.

    Without ``all_series`` it fits a screen: only series with values in two or more versions
    (a series of one point has no step), at most ``lines`` lines (default
    :data:`~argusdb.answers.format.SCREEN_LINES`, with the header and the "+ N more" line):
    the headline signals first, then the series whose steps changed most.
    """
    from argusdb.answers import format as fmt

    stepped = [s for s in t.series
               if all_series or sum(p.median is not None for p in s.points) >= 2]
    shown = stepped
    if not all_series:
        budget = (lines or fmt.SCREEN_LINES) - 2  # the header and the "+ N more" line
        room = max(1, budget // max(1, len(t.versions)))
        keep = {id(s) for s in sorted(stepped, key=_screen_rank)[:room]}
        # by region, as the trajectory orders them; in a region the headline signals first
        place = {r: i for i, r in enumerate(dict.fromkeys(s.region_id for s in stepped))}
        shown = sorted((s for s in stepped if id(s) in keep),
                       key=lambda s: (place[s.region_id], *_screen_rank(s)))
    keys = [(s.region_id, s.signal) for s in shown]
    two = len(set(keys)) < len(keys)
    # a screen shows Nsight Compute's metric names short (--all and --json: in full)
    names = ({s.signal: s.signal for s in shown} if all_series else
             screen_names([s.signal for s in shown], SIGNAL_WIDTH,
                          among=[s.signal for s in t.series]))
    cols = ["region", "signal", *(["cohort"] if two else []), "version", "lines", "n",
            "median", "95% CI", "step", "step verdict"]
    rows = []
    for s in shown:
        unit = fmt.display_unit(s.signal, s.unit)
        cohort = (f"{s.key.evidence_class}, {fmt.signature(s.key.standing)}"
                  + (f", {s.key.sampler_text()}" if s.key.sampler else "")
                  + (f", {s.key.scope_text()}" if s.key.scope else ""))
        for p in s.points:
            where = f"{p.start_line}-{p.end_line}" if p.start_line else fmt.MISSING
            ci = (fmt.MISSING if fmt.missing(p.ci_low) or fmt.missing(p.ci_high)
                  else fmt.span(p.ci_low, p.ci_high, unit))
            rows.append([s.region_id, names[s.signal], *([cohort] if two else []), p.label, where,
                         fmt.number(p.n), fmt.quantity(p.median, unit), ci,
                         fmt.ratio(p.step_ratio), fmt.text(p.step_verdict)])
    right = [False, False, *([False] if two else []), False, False, True, True, True, True,
             False]
    return Screen(cols, rows, right, shown, more=len(stepped) - len(shown),
                  single=len(t.series) - len(stepped))


def _trajectory_html(t: Trajectory) -> str:
    """One row per (series, version): median, CI and the step from the previous version;
    the screen view of :func:`human_table` (``to_json()`` has every point)."""
    screen = human_table(t)
    colours = [notebook.COLOURS.get(step_class(s.signal, s.unit, p.step_ratio,
                                               p.step_significant), "")
               for s in screen.series for p in s.points]
    more = screen.more_line()
    return notebook.table(screen.columns, screen.rows, colours, screen.right) + (
        f"<p>{html.escape(more.replace('--all', 'human_table(t, all_series=True)'))}</p>"
        if more else "")
