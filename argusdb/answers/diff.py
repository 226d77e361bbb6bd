"""Region-keyed diffs across program versions over repeated launches.

For one region and each signal, the diff compares the cohort of the *from* version with the
cohort of the *to* version that has the same standing (clean or perturbed by which
interference signature), evidence class and scope
(see :mod:`argusdb.answers.compat`; anything else is refused with the checker's rule codes).
It reports the medians, their ratio ``to / from``, a bootstrap CI of the ratio of medians, a
two-sided Mann-Whitney U p-value and a **noise floor**.

A ratio says how much a value grew only while both medians have one sign and the from median
is not 0: a derived ``exposed_latency`` going from -95 ns to 50 ns has a "ratio" of -0.53 that
means nothing. There the row has no ratio and no CI (``null`` in JSON, ``–`` on the screen),
and its change is the difference ``to - from`` in the signal's unit (``higher by 145 ns``),
significant on the rank test alone (a relative noise floor does not apply to it).

The noise floor is the larger of ``min_effect`` (default 1 %) and the run-to-run spread of the
median of any version of the same region measured in two or more runs of the same cohort
(``(max - min) / median`` of the per-run medians): a systematic shift between two recordings of
one program is noise, however small its p-value. A difference is **significant** when
``p < alpha``, the CI excludes 1 and ``|ratio - 1|`` is at least the noise floor; otherwise the
diff says "not significant" and why. A row whose evidence has a gap on either side (see
:mod:`argusdb.answers.sufficiency`: ``_unattributed`` share above the threshold, library code
without call sites, a scope asked but not delivered) is ``insufficient``: never significant,
its verdict says why, and ``unattributed_share`` shows the larger share of the two sides.

Example:
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     result = diff(db, "matmul/matmul_kernel", "config=bk64_s3", "config=bk32_s1")
    >>> [(r.signal, round(r.ratio, 1), r.significant) for r in result.rows]
    [('duration', 2.0, True)]
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from argusdb.answers import notebook, stats
from argusdb.answers.compat import match_cohorts
from argusdb.answers.direction import step_class
from argusdb.answers.format import percent
from argusdb.answers.select import (
    Cohort,
    CohortKey,
    VersionRef,
    cohorts,
    fetch_table,
    lit,
    resolve_versions,
    sampler_words,
    version_cohorts,
    versions_in,
)
from argusdb.answers.sufficiency import (
    MAX_UNATTRIBUTED_SHARE,
    Coverage,
    insufficient_reason,
    missing,
)
from argusdb.errors import QueryRefused

if TYPE_CHECKING:
    import pyarrow as pa

    from argusdb.api import Connection

#: Default smallest relative change reported as significant (documented minimum effect).
MIN_EFFECT = 0.01
#: Default significance level of the rank test.
ALPHA = 0.05
#: Rows of a diff's screen view (:func:`screen_rows`).
SCREEN_ROWS = 20


@dataclass
class DiffRow:
    """One region and signal compared across two versions (JSON keys are the field names)."""

    region_id: str
    signal: str
    unit: str | None
    from_version: str
    to_version: str
    from_median: float
    to_median: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool
    verdict: str
    noise_floor: float
    noise_source: str
    n_from: int
    n_to: int
    from_runs: list[str]
    to_runs: list[str]
    standing: str
    signature: str
    evidence_class: str
    scope: str
    #: 'sufficient', or 'insufficient' when either side's evidence has a gap.
    sufficiency: str = "sufficient"
    #: Larger ``_unattributed`` share (0..1) of the two sides (attributed rows), else None.
    unattributed_share: float | None = None
    #: Gaps of either side, each with its side ('from' / 'to'), message and remedy.
    gaps: list[dict[str, Any]] = field(default_factory=list)
    #: The collector that sampled both sides' values (sample counts only, else empty).
    sampler: str = ""
    #: ``to_median - from_median`` in ``unit``: the change where there is no ratio.
    difference: float = math.nan

    def to_json(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}

    def step(self) -> float:
        """The change as a factor whatever the signs: ``1 + (to - from) / |from|`` (the ratio
        when the from median is positive), above 1 when the value went up; ``±inf`` from a
        from median of 0, 1 when both are 0."""
        return step_of(self.from_median, self.to_median)


def has_ratio(before: float, after: float) -> bool:
    """Whether ``after / before`` says how much a value changed: ``before`` is not 0 and
    ``after`` does not have the other sign (a ratio across a sign change means nothing)."""
    return before != 0 and not (before < 0 < after or after < 0 < before)


def step_of(before: float, after: float) -> float:
    """``1 + (after - before) / |before|``: above 1 when the value went up (see
    :meth:`DiffRow.step`)."""
    if before == 0:
        return 1.0 if after == 0 else math.copysign(math.inf, after)
    return 1.0 + (after - before) / abs(before)


@dataclass
class DiffResult:
    """Rows of a diff plus notes on cohorts that had no partner in the other version."""

    region_id: str
    from_ref: VersionRef
    to_ref: VersionRef
    rows: list[DiffRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """The answer as an HTML table (Jupyter shows it)."""
        return _diff_html(self)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "region_id": self.region_id,
                "from": {"label": self.from_ref.label,
                         "program_version": self.from_ref.program_version,
                         "runs": list(self.from_ref.runs)},
                "to": {"label": self.to_ref.label, "program_version": self.to_ref.program_version,
                       "runs": list(self.to_ref.runs)},
                "rows": [r.to_json() for r in self.rows], "notes": self.notes}


class NoiseModel:
    """Run-to-run spread per (region, signal, cohort key), measured over all stored versions.

    The region's rows of every version are read once (one checked query, or the ``rows`` the
    caller already fetched with :func:`~argusdb.answers.select.fetch_table`), whatever the
    number of versions and signals asked about.
    """

    def __init__(self, db: Connection, region: str, min_effect: float,
                 rows: pa.Table | None = None,
                 found: dict[tuple[str, str, CohortKey], Cohort] | None = None) -> None:
        self.db, self.region, self.min_effect = db, region, min_effect
        self._rows = rows
        self._found = found  # cohorts(rows), when the caller has them already
        self._spreads: dict[tuple[str, CohortKey], tuple[float, str]] | None = None

    def _measure(self) -> dict[tuple[str, CohortKey], tuple[float, str]]:
        rows = self._rows if self._rows is not None else \
            fetch_table(self.db, [f"e.region_id = {lit(self.region)}"])
        found = self._found if self._found is not None and self._rows is not None \
            else cohorts(rows)
        spreads: dict[tuple[str, CohortKey], tuple[float, str]] = {}
        for v in versions_in(rows):  # the first version with the largest spread names it
            for (ver, sig, k), co in found.items():
                if ver != v:
                    continue
                medians = co.run_medians()
                if len(medians) < 2:
                    continue
                s = stats.run_spread(medians)
                if s > spreads.get((sig, k), (-1.0, ""))[0]:
                    spreads[(sig, k)] = (s, f"run-to-run spread {percent(s)} of version {v} "
                                            f"({len(medians)} runs)")
        return spreads

    def floor(self, signal: str, key: CohortKey) -> tuple[float, str]:
        if self._spreads is None:
            self._spreads = self._measure()
        spread, source = self._spreads.get((signal, key), (0.0, ""))
        if spread > self.min_effect:
            return spread, source
        return self.min_effect, f"minimum effect {percent(self.min_effect)}" + (
            f" (above the {source})" if source else " (no version has repeated runs)")


def _verdict(t: stats.RatioTest, floor: float, alpha: float, unit: str | None = None
             ) -> tuple[bool, str]:
    if not has_ratio(t.from_median, t.to_median):
        return _verdict_without_ratio(t, alpha, unit)
    if math.isnan(t.p_value):
        return False, "not significant: fewer than 2 repeats on a side"
    if t.p_value >= alpha:
        return False, f"not significant: p={t.p_value:.3g} >= {alpha}"
    if t.ci_low <= 1.0 <= t.ci_high:
        return False, f"not significant: CI [{t.ci_low:.4f}, {t.ci_high:.4f}] contains 1"
    change = abs(t.ratio - 1.0)
    if change < floor:
        return False, (f"not significant: |ratio - 1| = {percent(change)} is within the "
                       f"noise floor {percent(floor)}")
    return True, f"{'lower' if t.to_median < t.from_median else 'higher'} by {percent(change)}"


def _verdict_without_ratio(t: stats.RatioTest, alpha: float, unit: str | None
                           ) -> tuple[bool, str]:
    """The verdict of medians that have no ratio (:func:`has_ratio`): the difference, in
    ``unit``, significant on the rank test alone.

    >>> t = stats.RatioTest(-0.53, -0.6, -0.4, 0.001, -95.0, 50.0)
    >>> _verdict_without_ratio(t, 0.05, "ns")
    (True, 'higher by 145 ns (the sign changed: no ratio; p=0.001)')
    """
    from argusdb.answers.format import quantity

    if t.from_median == 0 == t.to_median:
        return False, "not significant: both medians are 0, no ratio"
    why = "the from median is 0" if t.from_median == 0 else "the sign changed"
    delta = t.to_median - t.from_median
    by = f"{'higher' if delta > 0 else 'lower'} by {quantity(abs(delta), unit)}"
    if math.isnan(t.p_value):
        return False, f"not significant: fewer than 2 repeats on a side ({by}; {why}: no ratio)"
    if t.p_value >= alpha:
        return False, (f"not significant: p={t.p_value:.3g} >= {alpha} ({by}; {why}: no "
                       f"ratio)")
    return True, f"{by} ({why}: no ratio; p={t.p_value:.3g})"


def diff(db: Connection, region: str, before: str | VersionRef, after: str | VersionRef,
         signals: list[str] | None = None, *, min_effect: float = MIN_EFFECT,
         alpha: float = ALPHA, max_unattributed: float = MAX_UNATTRIBUTED_SHARE) -> DiffResult:
    """Compare ``region`` between two versions, signal by signal.

    Args:
        db: an open connection.
        region: region ID, e.g. ``matmul/matmul_kernel``.
        before, after: version selectors (see :func:`~argusdb.answers.select.resolve_version`).
        signals: signals to compare; default every signal both versions have.
        min_effect: smallest relative change that may count as significant.
        alpha: significance level of the Mann-Whitney U test.

    Raises:
        UsageError: unknown version or region (exit 2).
        NoEvidence: a version has no evidence of the region or signal (exit 3, with the
            ``argus observe`` request that would produce it).
        QueryRefused: the versions' evidence is not comparable (exit 1, rule codes).
    """
    named = [v for v in (before, after) if not isinstance(v, VersionRef)]
    resolved = iter(resolve_versions(db, named, region) if named else [])
    ref_a, ref_b = (v if isinstance(v, VersionRef) else next(resolved) for v in (before, after))
    # One read of the region (every version: the noise floor needs them all), split in Python.
    where = [f"e.region_id = {lit(region)}"]
    if signals:
        where.append(f"e.signal IN ({', '.join(lit(s) for s in signals)})")
    region_rows = fetch_table(db, where, plans=True)
    found = cohorts(region_rows)
    sides: list[dict[str, list[Cohort]]] = []
    for ref in (ref_a, ref_b):
        by_signal: dict[str, list[Cohort]] = {}
        for (_, sig, _), co in version_cohorts(region_rows, found, ref).items():
            by_signal.setdefault(sig, []).append(co)
        if not by_signal:
            raise missing(db, region, signals, f"{ref.program_version} ({ref.label})")
        sides.append(by_signal)
    if signals:
        for sig in signals:
            for ref, side in zip((ref_a, ref_b), sides, strict=True):
                if sig not in side:
                    raise missing(db, region, [sig], f"{ref.program_version} ({ref.label})")
        wanted = list(signals)
    else:
        wanted = sorted(set(sides[0]) & set(sides[1]))
    result = DiffResult(region, ref_a, ref_b)
    noise = NoiseModel(db, region, min_effect, region_rows, found)
    coverage = Coverage(db, max_unattributed)
    coverage.plans_of_rows(region_rows)  # the rows carry their runs' plans
    refusals = []
    for sig in wanted:
        pairs, findings = match_cohorts(sig, sides[0][sig], sides[1][sig])
        refusals.extend(findings)
        matched = {a.key for a, _ in pairs}
        for side_name, side in (("from", sides[0]), ("to", sides[1])):
            for co in side[sig]:
                if co.key not in matched:
                    result.notes.append(f"{sig}: the {side_name} version's {_cohort_words(co)} "
                                        f"have no comparable values in the other version; "
                                        f"left out")
        for a, b in pairs:
            xa, xb = a.samples, b.samples
            t = stats.ratio_test(xa, xb)
            floor, source = noise.floor(sig, a.key)
            significant, verdict = _verdict(t, floor, alpha, a.unit)
            ratio, lo, hi = ((t.ratio, t.ci_low, t.ci_high)
                             if has_ratio(t.from_median, t.to_median) else (math.nan,) * 3)
            result.rows.append(DiffRow(
                region, sig, a.unit, ref_a.program_version, ref_b.program_version,
                t.from_median, t.to_median, ratio,
                lo, hi, t.p_value, significant, verdict, floor, source,
                len(xa), len(xb), a.runs, b.runs, a.key.standing,
                f"{a.signature} -> {b.signature}" if a.signature != b.signature
                else a.signature,
                a.key.evidence_class, a.key.scope_text(), sampler=a.key.sampler,
                difference=t.to_median - t.from_median))
            _judge_sufficiency(result.rows[-1], coverage, region, sig, a, b)
    if refusals:
        raise QueryRefused(refusals)
    return result


def _cohort_words(co: Cohort) -> str:
    """A cohort in words: ``observed values under replay(20 passes)+pc_sampling``."""
    from argusdb.answers.format import signature

    where = f" at {co.key.scope_text()}" if co.key.scope else ""
    standing = "clean" if co.key.standing == "clean" else f"under {signature(co.key.standing)}"
    of = f" ({co.key.sampler_text()})" if co.key.sampler else ""
    return f"{co.key.evidence_class} values{of} {standing}{where}"


def _judge_sufficiency(row: DiffRow, coverage: Coverage, region: str, signal: str,
                       a: Cohort, b: Cohort) -> None:
    """Mark ``row`` insufficient when either side's evidence has a gap."""
    gaps: list[dict[str, Any]] = []
    shares: list[float] = []
    why: list[str] = []
    for side, co in (("from", a), ("to", b)):
        found = coverage.gaps(region, co.program_version, signal, co.key.evidence_class,
                              dict(co.key.scope), co.runs, co.association_entropy)
        gaps.extend({"side": side, **g.to_json()} for g in found)
        if co.key.evidence_class == "attributed":
            share = coverage.unattributed_share(region, co.program_version, signal, co.runs)
            if share is not None:
                shares.append(share)
        if found:
            why.append(f"{side} version {co.program_version}: {insufficient_reason(found)}")
    row.unattributed_share = max(shares) if shares else None
    if gaps:
        row.verdict = f"insufficient: {'; '.join(why)} (statistically: {row.verdict})"
        row.sufficiency, row.significant, row.gaps = "insufficient", False, gaps


def regressions(result: DiffResult, threshold: float = 0.0) -> list[DiffRow]:
    """The rows of ``result`` that got worse: significant, in the wrong direction for their
    signal (:mod:`argusdb.answers.direction`), and by at least ``threshold`` (a fraction:
    0.05 is 5 %). Insufficient rows are never significant and signals without a direction
    (instruction counts) never regress; what ``argus diff --fail-on regression`` fails on.

    Example:
        >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
        ...     slower = diff(db, "matmul/matmul_kernel", "config=bk64_s3", "config=bk32_s1")
        >>> [(r.signal, round(r.ratio, 1)) for r in regressions(slower, 0.05)]
        [('duration', 2.0)]
    """
    from argusdb.answers.direction import step_class

    return [r for r in result.rows
            if step_class(r.signal, r.unit, r.step(), r.significant) == "worse"
            and math.isfinite(r.step()) and abs(r.step() - 1.0) >= threshold]


def change(row: DiffRow) -> str:
    """A row's change in a few characters: the ratio (``0.9315x``), or where it has none the
    difference with its unit (``+145 ns``)."""
    from argusdb.answers import format as fmt

    if math.isfinite(row.ratio):
        return f"{fmt.ratio(row.ratio)}x"
    if math.isnan(row.difference):
        return fmt.MISSING
    return f"{'+' if row.difference > 0 else ''}{fmt.quantity(row.difference, row.unit)}"


def screen_rows(rows: list[DiffRow], limit: int = SCREEN_ROWS) -> list[DiffRow]:
    """The rows a screen shows: the headline signals, then the changed ones (largest change
    first), then those with a value, then zeros, ``limit`` at most; in the diff's own order
    (``argus diff`` without ``--all``, and the notebook's table)."""
    from argusdb.answers.format import HEADLINE

    order = {s: i for i, s in enumerate(HEADLINE)}

    def rank(ir: tuple[int, DiffRow]) -> tuple[int, int, float, bool, int]:
        i, r = ir
        step = r.step()
        # a change without a ratio (a sign change, a from median of 0) ranks as a large one
        change = abs(math.log(step)) if 0 < step < math.inf else math.inf if step != 1 \
            else 0.0
        zero = not (r.from_median or r.to_median)  # values before zeros
        return (r.signal not in order, order.get(r.signal, 0), -change, zero, i)

    keep = {i for i, _ in sorted(enumerate(rows), key=rank)[:limit]}
    return [r for i, r in enumerate(rows) if i in keep]


def cohort_label(row: DiffRow) -> str:
    """Which cohort a row compares: class and standing, and the scope when not per launch
    (``observed, clean``; ``observed, replay(38 passes)``)."""
    from argusdb.answers.format import signature

    out = f"{row.evidence_class}, {signature(row.standing)}"
    if row.sampler:
        out += f", {sampler_words(row.sampler)}"
    return out if row.scope in ("per launch", "kernel") else f"{out}, {row.scope}"


def human_table(result: DiffResult, rows: list[DiffRow] | None = None
                ) -> tuple[list[str], list[list[str]], list[bool]]:
    """The diff as a person reads it: columns, formatted cells and which columns are
    right-aligned, of ``rows`` (default every row of ``result``). Values carry their unit
    (:mod:`argusdb.answers.format`); a ``cohort`` column appears when one signal is compared
    in two cohorts."""
    from argusdb.answers import format as fmt

    chosen = result.rows if rows is None else rows
    signals = [r.signal for r in chosen]
    two = len(set(signals)) < len(signals)
    cols = ["signal", *(["cohort"] if two else []), "from", "to", "ratio", "95% CI", "p",
            "n from/to", "verdict"]
    cells = [[r.signal, *([cohort_label(r)] if two else []),
              fmt.quantity(r.from_median, r.unit), fmt.quantity(r.to_median, r.unit),
              fmt.ratio(r.ratio), fmt.interval(r.ci_low, r.ci_high), fmt.p_value(r.p_value),
              f"{r.n_from}/{r.n_to}", r.verdict] for r in chosen]
    right = [False, *([False] if two else []), True, True, True, True, True, True, False]
    return cols, cells, right


def _diff_html(d: DiffResult) -> str:
    """A diff's rows, the verdict coloured by the signal's direction."""
    every = d.rows
    shown = screen_rows(every)
    cols, rows, right = human_table(d, shown)
    colours = [notebook.COLOURS.get(step_class(r.signal, r.unit, r.step(), r.significant),
                                    "") for r in shown]
    head = (f"<p><b>{html.escape(d.region_id)}</b>: {html.escape(d.from_ref.label)} → "
            f"{html.escape(d.to_ref.label)}</p>")
    more = (f"<p>+ {len(every) - len(shown)} more signals (to_json(): every row)</p>"
            if len(shown) < len(every) else "")
    return head + notebook.table(cols, rows, colours, right) + more
