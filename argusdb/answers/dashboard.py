"""A static dashboard: region breakdown, trajectory plots with CIs, and the diff table.

``build(db, out_dir)`` writes ``index.html``: one self-contained file (CSS inline, charts as
inline SVG from matplotlib's SVG backend, no scripts, no network). Per program it shows:

- **region breakdown** of the version with evidence in the most regions (latest on ties): each
  region's claims (median, class, n, verdict) and a bar chart per signal;
- **trajectories** along its versions in the order they were first recorded: median per
  version with its 95 % bootstrap CI as error bars, significant steps marked;
- **diff table**: each step between consecutive versions (ratio, CI, p, noise floor, verdict).

Claims and steps whose evidence has a gap (see :mod:`argusdb.answers.sufficiency`) show
``insufficient`` with the ``_unattributed`` share and the reason. A ``--signal`` the store has
no region evidence of is refused with the closest known signals (exit 2).

Example:
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     page = build(db, "dash/")   # then open dash/index.html
    >>> page.name
    'index.html'
"""

from __future__ import annotations

import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argusdb.answers import format as fmt
from argusdb.answers.claims import Claim
from argusdb.answers.direction import step_class
from argusdb.answers.report import report
from argusdb.answers.select import VersionRef, versions_of_region
from argusdb.answers.sufficiency import did_you_mean, observe_request
from argusdb.answers.trajectory import Series, trajectory
from argusdb.errors import NoEvidence, UsageError
from argusdb.schema.sqltext import literal

if TYPE_CHECKING:
    from argusdb.api import Connection

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:32px}
h3{font-size:15px}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.better{color:#070;font-weight:600}.worse{color:#b00;font-weight:600}
.changed{color:#05a;font-weight:600}.insufficient{color:#b00}.chart{display:inline-block;margin:6px}
.note{color:#666;font-size:12px}
"""
_CLASS_COLORS = {"observed": "#1f77b4", "attributed": "#ff7f0e", "derived": "#9467bd"}
#: Colours of significant steps by what they mean for the signal (see answers.direction).
_STEP_COLORS = {"better": "#070", "worse": "#b00", "changed": "#05a"}
#: Instructions shown per kernel in the hot-spot table.
HOTSPOTS = 10
#: Signals whose per-instruction values make hot spots, in order of preference.
HOTSPOT_SIGNALS = ("warp_stall_samples", "inst_executed")


@dataclass
class ProgramView:
    """What the dashboard shows for one program."""

    program: str
    versions: list[VersionRef]
    labels: dict[str, str]
    claims: list[Claim] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    breakdown_version: str = ""
    #: HTML of the program's distributed launches (per-rank tables and timelines), or "".
    ranks_html: str = ""
    #: Hottest instructions of the breakdown version (kernel, pc, line, SASS, value, share).
    hotspots: list[dict[str, Any]] = field(default_factory=list)


def _scale(unit: str | None, values: list[float]) -> tuple[float, str | None]:
    """The factor and unit of a chart's axis: human units (µs, M inst), as the tables write
    values, so that no tick label needs an exponent."""
    return fmt.axis_unit(max((abs(v) for v in values if not fmt.missing(v)), default=0.0),
                         unit)


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _labels(db: Connection, versions: list[str]) -> dict[str, str]:
    """Short labels: the --option values that differ between versions, else the ID prefix."""
    opts = {}
    for v in versions:
        rows = db.query(f"SELECT options FROM program_version WHERE program_version = "
                        f"{literal(v)}").to_pylist()
        opts[v] = json.loads(rows[0]["options"] or "{}") if rows else {}
    keys = sorted({k for o in opts.values() for k in o
                   if len({json.dumps(x.get(k)) for x in opts.values()}) > 1})
    out = {}
    for v in versions:
        parts = [f"{k}={opts[v][k]}" for k in keys if k in opts[v]]
        out[v] = ",".join(parts) if parts else v[:8]
    if len(set(out.values())) < len(out):
        out = {v: f"{lab} ({v[:6]})" for v, lab in out.items()}
    return out


#: Signals the dashboard shows unless told otherwise (those the store has).
DEFAULT_SIGNALS = ("duration", "inst_executed", "warp_stall_samples", "exposed_latency")


def collect(db: Connection, signals: list[str] | None = None,
            include_variants: bool = False) -> list[ProgramView]:
    """Programs with region evidence, their versions (first-recorded order), claims, series.

    Args:
        signals: signals to show; default those of :data:`DEFAULT_SIGNALS` the store has (all
            signals when it has none of them).
        include_variants: also put variants (forced waits, probes) on the trajectories; by
            default a trajectory follows original versions only.
    """
    regions = [str(r["region_id"]) for r in db.query(
        "SELECT DISTINCT region_id FROM evidence WHERE region_id IS NOT NULL "
        "ORDER BY region_id").to_pylist()]
    if not regions:
        raise NoEvidence("the store has no region evidence yet (ingest artefacts with "
                         "--program, or observe a region)",
                         [observe_request("PROGRAM/KERNEL/REGION", ["duration"],
                                          source="SOURCE_FILE")])
    have = {str(r["signal"]) for r in db.query(
        "SELECT DISTINCT signal FROM evidence WHERE region_id IS NOT NULL").to_pylist()}
    if signals is None:
        signals = [x for x in DEFAULT_SIGNALS if x in have] or None
    else:
        for sig in signals:
            if sig not in have:
                raise did_you_mean(sig, sorted(have), "signal")
    first_seq: dict[str, int] = {}
    for r in db.query("SELECT program_version, run_seq FROM run").to_pylist():
        v = str(r["program_version"])
        first_seq[v] = min(first_seq.get(v, int(r["run_seq"])), int(r["run_seq"]))
    variants = {str(r["program_version"]) for r in db.query(
        "SELECT program_version FROM program_version WHERE transform IS NOT NULL").to_pylist()}
    by_program: dict[str, list[str]] = {}
    for r in regions:
        by_program.setdefault(r.split("/", 1)[0], []).append(r)
    views = []
    for program, regs in sorted(by_program.items()):
        has: dict[str, list[str]] = {}
        for r in regs:
            for v in versions_of_region(db, r):
                if include_variants or v not in variants:
                    has.setdefault(v, []).append(r)
        if not has:
            continue
        order = sorted(has, key=lambda v: first_seq.get(v, 0))
        labels = _labels(db, order)
        refs = [VersionRef(v, labels[v]) for v in order]
        view = ProgramView(program, refs, labels)
        # The breakdown shows the version with evidence in the most regions (latest on ties).
        shown = max(reversed(order), key=lambda v: len(has[v]))
        view.breakdown_version = shown
        for r in has[shown]:
            try:
                view.claims.extend(report(db, r, [shown], signals=signals).claims)
            except (NoEvidence, UsageError):
                # none of the shown signals in that version; or a program-level region of a
                # distributed derivation (<program>/step, <program>/launch) no source declares
                continue
        view.hotspots = hotspots(db, shown)
        if len(refs) >= 2:
            try:
                view.series = trajectory(db, regs, list(refs), signals).series
            except (NoEvidence, UsageError):
                view.series = []
        from argusdb.answers.rank_views import dashboard_section

        view.ranks_html = dashboard_section(db.store, program)
        views.append(view)
    return views


def hotspots(db: Connection, version: str, n: int = HOTSPOTS) -> list[dict[str, Any]]:
    """The ``n`` instructions of ``version`` with the most of the first signal of
    :data:`HOTSPOT_SIGNALS` it has per instruction, per kernel and run, with their SASS, source
    line and share of their kernel's total in that run."""
    lit = literal(version)
    have = {str(r["signal"]) for r in db.query(
        f"SELECT DISTINCT signal FROM evidence WHERE program_version = {lit} "
        f"AND pc IS NOT NULL").to_pylist()}
    signal = next((s for s in HOTSPOT_SIGNALS if s in have), None)
    if signal is None:
        return []
    rows = db.query(
        f"SELECT e.run_id, e.kernel, e.pc, e.source_file, e.source_line, e.value, e.unit, "
        f"i.sass, e.value / sum(e.value) OVER (PARTITION BY e.run_id, e.kernel) AS share "
        f"FROM evidence e LEFT JOIN instruction i ON i.run_id = e.run_id "
        f"AND i.kernel = e.kernel AND i.pc = e.pc WHERE e.program_version = {lit} "
        f"AND e.signal = {literal(signal)} AND e.pc IS NOT NULL "
        f"ORDER BY e.value DESC, e.pc LIMIT {int(n)}").to_pylist()
    for r in rows:
        r["signal"] = signal
    return rows


def _breakdown_charts(view: ProgramView) -> list[str]:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    out = []
    for sig in sorted({c.signal for c in view.claims}):
        cs = [c for c in view.claims if c.signal == sig]
        fig = Figure(figsize=(6.0, 0.5 + 0.45 * len(cs)))
        ax = fig.subplots()
        names = [f"{c.region_id.split('/', 1)[1]} [{c.evidence_class}"
                 + ("" if c.standing in ("clean", "derived") else ", perturbed") + "]"
                 for c in cs]
        k, unit = _scale(fmt.display_unit(sig, cs[0].unit), [c.value for c in cs])
        ax.barh(names, [c.value * k for c in cs],
                color=[_CLASS_COLORS.get(c.evidence_class, "#777") for c in cs])
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.set_xlabel(f"{sig} ({unit}), median over repeats")
        ax.invert_yaxis()
        ax.set_title(f"{view.program} {view.labels[cs[0].program_version]}: {sig}")
        out.append(_svg(fig))
    return out


def _trajectory_chart(view: ProgramView, s: Series) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.2))
    ax = fig.subplots()
    k, unit = _scale(fmt.display_unit(s.signal, s.unit),
                     [x for p in s.points for x in (p.median, p.ci_high) if x is not None])
    xs, ys, lo, hi, labels = [], [], [], [], []
    for i, p in enumerate(s.points):
        labels.append(view.labels[p.program_version])
        if p.median is None:
            continue
        xs.append(i)
        ys.append(p.median * k)
        lo.append(k * (p.median - (p.ci_low if p.ci_low is not None else p.median)))
        hi.append(k * ((p.ci_high if p.ci_high is not None else p.median) - p.median))
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=5, color="#1f77b4",
                label="median, 95 % CI")
    for i, p in enumerate(s.points):
        if p.sufficiency == "insufficient" and p.median is not None:
            share = "" if p.unattributed_share is None else \
                f" ({fmt.percent(p.unattributed_share, 0)} unattributed)"
            ax.annotate(f"insufficient{share}", (i, p.median * k), textcoords="offset points",
                        xytext=(6, -14), color="#b00", fontsize=8)
        if p.step_significant and p.median is not None and p.step_ratio is not None:
            cls = step_class(s.signal, s.unit, p.step_ratio, p.step_significant)
            ax.annotate(f"×{p.step_ratio:.3f}", (i, p.median * k), textcoords="offset points",
                        xytext=(6, 8), color=_STEP_COLORS.get(cls, "#333"))
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    ax.set_ylabel(f"{s.signal} ({unit})")
    ax.set_title(f"{s.region_id}: {s.signal} [{_cohort(s)}]", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    ax.margins(x=0.08, y=0.15)  # room for the step annotations
    return _svg(fig)


def _cohort(s: Series) -> str:
    """A series' cohort in words: class and standing, and the sampler of sample counts."""
    out = f"{s.key.evidence_class}, {fmt.signature(s.key.standing)}"
    return out + (f", {s.key.sampler_text()}" if s.key.sampler else "")


def _share(v: float | None) -> str:
    """A share as the page's HTML (``&lt; 0.1 %`` below a tenth of a percent)."""
    return html.escape(fmt.share(v))


def _fmt(v: Any, unit: str | None = None) -> str:
    """A value of the page in the one style of :mod:`argusdb.answers.format`, with its unit."""
    return html.escape(fmt.quantity(v, unit) if unit is not None else fmt.number(v))


def _hotspot_table(v: ProgramView) -> list[str]:
    e = html.escape
    if not v.hotspots:
        return ["<p class='note'>no per-instruction evidence in this version (observe "
                "warp_stall_samples or inst_executed for instruction-level hot spots)</p>"]
    sig = v.hotspots[0]["signal"]
    out = [f"<h3>Instruction hot spots ({e(sig)})</h3><table class='hotspots'><tr>"
           "<th>kernel</th><th>pc</th><th>source</th><th>SASS</th><th>value</th>"
           "<th>share of kernel</th></tr>"]
    for h in v.hotspots:
        sass = str(h.get("sass") or "")
        short = sass if len(sass) <= 48 else sass[:47] + "…"
        where = f"{h.get('source_file') or '?'}:{h.get('source_line') or '?'}"
        out.append(f"<tr><td>{e(str(h['kernel']))}</td><td class='num'>{int(h['pc']):#06x}</td>"
                   f"<td>{e(where)}</td><td title='{e(sass)}'><code>{e(short)}</code></td>"
                   f"<td class='num'>{_fmt(h['value'], fmt.display_unit(sig, h['unit']))}</td>"
                   f"<td class='num'>{_share(h['share'])}</td></tr>")
    out.append("</table>")
    return out


def render(views: list[ProgramView]) -> str:
    """The dashboard page as one HTML string."""
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'>",
             "<title>argusdb dashboard</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>argusdb dashboard</h1>"]
    for v in views:
        parts.append(f"<h2 id='program-{e(v.program)}'>{e(v.program)}</h2>")
        # a distributed program leads with its observed launches (clean step time and
        # exposed communication), before per-region claims and derived values
        parts.append(v.ranks_html)
        parts.append("<p class='note'>versions in recording order: " + ", ".join(
            f"{e(v.labels[r.program_version])} = {e(r.program_version)}" for r in v.versions)
            + "</p>")
        parts.append(f"<section class='breakdown'><h3>Region breakdown "
                     f"({e(v.labels[v.breakdown_version])})</h3>")
        parts.extend(f"<div class='chart breakdown-chart'>{svg}</div>"
                     for svg in _breakdown_charts(v))
        parts.append("<table class='claims'><tr><th>region</th><th>signal</th><th>median</th>"
                     "<th>class</th><th>cohort</th><th>n</th><th>IQR</th><th>entropy</th>"
                     "<th>unattributed share</th><th>verdict</th></tr>")
        for c in v.claims:
            unit = fmt.display_unit(c.signal, c.unit) or ""
            parts.append(
                f"<tr><td>{e(c.region_id)}</td><td>{e(c.signal)}</td>"
                f"<td class='num'>{_fmt(c.value, unit)}</td>"
                f"<td>{e(c.evidence_class)}</td><td>{e(fmt.signature(c.standing))}</td>"
                f"<td class='num'>{c.n}</td>"
                f"<td class='num'>{_fmt(c.iqr, unit)}</td>"
                f"<td class='num'>{_fmt(c.association_entropy, 'bits')}</td>"
                f"<td class='num'>{_share(c.unattributed_share)}</td>"
                f"<td class='{e(c.verdict)}' title='{e(c.reason)}'>{e(c.verdict)}"
                + (f"<div class='note'>{e(c.reason)}</div>" if c.verdict == "insufficient"
                   else "") + "</td></tr>")
        parts.append("</table>")
        parts.extend(_hotspot_table(v))
        parts.append("</section><section class='trajectories'><h3>Trajectories</h3>")
        shown = [s for s in v.series if sum(p.median is not None for p in s.points) >= 2]
        if not shown:
            parts.append("<p class='note'>fewer than two versions with comparable evidence</p>")
        parts.extend(f"<div class='chart trajectory-chart'>{_trajectory_chart(v, s)}</div>"
                     for s in shown)
        parts.append("</section><section class='diffs'><h3>Diffs between consecutive "
                     "versions</h3>")
        if not shown:
            parts.append("<p class='note'>no diffs: one version only</p></section>")
            continue
        # a signal of a region in two cohorts (clean and replayed durations) says which
        keys = [(s.region_id, s.signal) for s in shown]
        two = len(set(keys)) < len(keys)
        parts.append("<table class='diff-table'><tr><th>region</th><th>signal</th>"
                     + ("<th>cohort</th>" if two else "")
                     + "<th>from</th><th>to</th><th>from median</th><th>to median</th>"
                     "<th>ratio</th><th>95 % CI</th><th>p</th><th>verdict</th></tr>")
        for s in shown:
            unit = fmt.display_unit(s.signal, s.unit) or ""
            cohort = f"<td>{e(_cohort(s))}</td>" if two else ""
            for prev, p in zip(s.points, s.points[1:], strict=False):
                if p.step_ratio is None:
                    continue
                cls = step_class(s.signal, s.unit, p.step_ratio, p.step_significant) or (
                    "insufficient" if (p.step_verdict or "").startswith("insufficient") else "")
                parts.append(
                    f"<tr><td>{e(s.region_id)}</td><td>{e(s.signal)}</td>{cohort}"
                    f"<td>{e(v.labels[prev.program_version])}</td>"
                    f"<td>{e(v.labels[p.program_version])}</td>"
                    f"<td class='num'>{_fmt(prev.median, unit)}</td>"
                    f"<td class='num'>{_fmt(p.median, unit)}</td>"
                    f"<td class='num'>{e(fmt.ratio(p.step_ratio))}</td>"
                    f"<td class='num'>{e(fmt.interval(p.step_ci_low, p.step_ci_high))}</td>"
                    f"<td class='num'>{e(fmt.p_value(p.step_p_value))}</td>"
                    f"<td class='{cls}'>{e(p.step_verdict or '')}</td></tr>")
        parts.append("</table></section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build(db: Connection, out_dir: str | Path, signals: list[str] | None = None,
          include_variants: bool = False) -> Path:
    """Write ``index.html`` into ``out_dir`` (created when missing); returns its path."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"argus dashboard needs matplotlib ({exc}); install it with "
                         f"pip install 'argusdb[dashboard]'") from exc
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    page.write_text(render(collect(db, signals, include_variants)), encoding="utf-8")
    return page
