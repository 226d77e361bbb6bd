"""A report that fits a screen: per version and signal one line, distributions summarised.

:func:`argusdb.answers.report.report` makes one claim per version, signal and cohort, and a
cohort per scope: an instrumented launch of 4,096 CTAs × 4 warps gives 16,384 ``scope_cycles``
claims. :func:`summarise` folds them for a person:

- **one line per version and signal** (and cohort, where a signal has two): the value with its
  unit, the evidence class, the cohort (standing and collection), the number of values and a
  verdict;
- **at most** :data:`~argusdb.answers.format.SCREEN_WIDTH` **columns**: a version whose lines
  share one cohort names it once in its title, else each line names its cohort by a letter
  that a legend under the table spells out; a signal name longer than the room left is shown
  without its Nsight Compute section (``SM_A.TriageCompute.``) and cut in the middle
  (:func:`argusdb.answers.names.screen_names`);
- a signal measured per scope (per CTA and warp) or per launch is a **distribution**: n,
  median, p10–p90 and min–max (the claims' values, or one claim's repeats);
- **stall reasons** (``stall_*``) are grouped by the collector that sampled them (Nsight
  Compute's warp-state samples and Proton's PC samples are different measurements), sorted by
  value, the top ones shown and the rest counted ("+ 23 more");
- at most ``limit`` signal lines per version ("+ N more signals"), and the reasons of
  insufficient verdicts once each.

``all_rows`` lifts the limits (every signal, every stall reason); per-scope lines are the
report's own claims (``argus report --detail`` or ``--scope``); ``--json`` has every field.

Example:
    >>> from argusdb.answers.report import report
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     lines = summarise(db, report(db, "softmax/softmax_fwd"))
    >>> lines[0].startswith("softmax/softmax_fwd: 1 version")
    True
"""

from __future__ import annotations

import statistics
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from argusdb.answers import format as fmt
from argusdb.answers.names import screen_names
from argusdb.answers.select import lit

if TYPE_CHECKING:
    from argusdb.answers.claims import Claim
    from argusdb.api import Connection


class Report(Protocol):
    """What the screen views read of a :class:`argusdb.answers.report.Report`."""

    region_id: str
    versions: list[dict[str, Any]]
    claims: list[Claim]
    missing: list[dict[str, str]]

#: Signals shown first, in this order; the others follow alphabetically.
HEADLINE = fmt.HEADLINE
#: Signal lines per version in the default view.
LIMIT = 12
#: Stall reasons shown per collector in the default view.
TOP_STALLS = 5
#: Width that the stall-reason and verdict lines wrap at.
WIDTH = 100
#: The narrowest a signal column is cut to (the other columns are never cut).
MIN_SIGNAL = 20
#: Letters that name a version's cohorts when its lines have more than one.
COHORT_KEYS = "abcdefghijklmnopqrstuvwxyz"
#: How collectors are named in the stall-reason lines (run kind -> words).
COLLECTION = {"ncu.source_csv": "Nsight Compute warp-state samples",
              "proton.pcsampling": "Proton PC samples", "proton.hatchet": "Proton PC samples"}


@dataclass
class Line:
    """One signal (and cohort) of one version, folded over its scopes."""

    signal: str
    unit: str | None
    evidence_class: str
    cohort: str
    values: list[float]
    claims: list[Claim] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Values behind the line: the scopes, or one claim's repeats."""
        return len(self.claims) if len(self.claims) > 1 else self.claims[0].n

    def spread(self) -> tuple[float, float, float, float, float]:
        """median, p10, p90, min, max of the line's values."""
        if len(self.claims) == 1:
            c = self.claims[0]
            return c.median, c.p10, c.p90, c.min_value, c.max_value
        x = np.asarray(self.values, dtype=float)
        p10, p90 = np.percentile(x, [10, 90])
        return float(np.median(x)), float(p10), float(p90), float(x.min()), float(x.max())

    def verdict(self) -> str:
        verdicts = sorted({c.verdict for c in self.claims})
        if len(verdicts) == 1:
            return verdicts[0]
        return ", ".join(f"{sum(c.verdict == v for c in self.claims):,} {v}" for v in verdicts)


def cohort(c: Claim) -> str:
    """The cohort of a claim in words: its standing, and the collection when clean."""
    sig = "; ".join(fmt.signature(s) for s in c.signature.split("; "))
    if c.standing == "clean":
        return f"clean ({sig})" if sig not in ("", "none") else "clean"
    if c.standing == "derived":
        return "derived"
    return fmt.signature(c.standing)


def _scope_names(claims: list[Claim]) -> str:
    keys: dict[str, None] = {}
    for c in claims[:50]:
        for part in c.scope.split(","):
            if "=" in part:
                keys[part.split("=", 1)[0]] = None
    return " × ".join(keys) or "scope"


def lines_of(claims: list[Claim]) -> list[Line]:
    """Fold one version's claims into lines: one per (signal, class, cohort)."""
    groups: dict[tuple[str, str, str], list[Claim]] = defaultdict(list)
    for c in claims:
        groups[(c.signal, c.evidence_class, cohort(c))].append(c)
    out = [Line(sig, fmt.display_unit(sig, cs[0].unit), cls, co, [c.value for c in cs], cs)
           for (sig, cls, co), cs in groups.items()]
    order = {s: i for i, s in enumerate(HEADLINE)}
    # the headline signals first; then the others, those with a value before the zeros
    return sorted(out, key=lambda ln: (order.get(ln.signal, len(order)),
                                       ln.signal not in order and not any(ln.values),
                                       ln.signal, ln.evidence_class, ln.cohort))


#: Columns of a version's signal table, and which are right-aligned.
COLUMNS = ("signal", "value", "class", "cohort", "n", "p10 – p90", "min – max", "verdict")
RIGHT = (False, True, False, False, True, True, True, False)


def table_rows(lines: list[Line], names: dict[str, str] | None = None,
               cohorts: dict[str, str] | None = None) -> list[list[str]]:
    """The signal table's cells of ``lines`` (:data:`COLUMNS`): a distribution's value is its
    median, its n names the scopes, its spread shows p10–p90 and min–max. ``names`` and
    ``cohorts`` give what a signal's and a cohort's cells show (default: them in full)."""
    rows = []
    for ln in lines:
        med, p10, p90, lo, hi = ln.spread()
        many = ln.n > 1
        value = fmt.quantity(med, ln.unit)
        if len(ln.claims) > 1:
            value = f"median {value}"
        n = f"{ln.n:,} {_scope_names(ln.claims)}" if len(ln.claims) > 1 else f"{ln.n:,}"
        rows.append([(names or {}).get(ln.signal, ln.signal), value, ln.evidence_class,
                     (cohorts or {}).get(ln.cohort, ln.cohort), n,
                     fmt.span(p10, p90, ln.unit) if many else "",
                     fmt.span(lo, hi, ln.unit) if many else "", ln.verdict()])
    return rows


def cohort_keys(lines: list[Line]) -> dict[str, str]:
    """The letter that names each cohort of ``lines`` in the table, in order of first
    appearance (``a``, ``b``, ...; past ``z``, numbers); empty when they share one."""
    every = list(dict.fromkeys(ln.cohort for ln in lines))
    if len(every) < 2:
        return {}
    return {c: COHORT_KEYS[i] if i < len(COHORT_KEYS) else str(i + 1)
            for i, c in enumerate(every)}


def screen_table(lines: list[Line], width: int = fmt.SCREEN_WIDTH, indent: str = "  ",
                 among: list[str] | None = None) -> list[str]:
    """The signal table of ``lines`` as text at most ``width`` columns wide (with ``indent``):
    cohorts by their letters (:func:`cohort_keys`; no cohort column when they share one), the
    signal names cut to the room the other columns leave (at least :data:`MIN_SIGNAL`) and
    distinct from ``among`` (the version's signals not shown)."""
    keys = cohort_keys(lines)
    full = table_rows(lines, cohorts=keys or {ln.cohort: "" for ln in lines})
    header = list(COLUMNS)
    # the room the other columns leave the signal's (as fmt.layout lays them out)
    kept = [i for i in range(1, len(header)) if any(r[i] for r in full)]
    others = sum(max(len(header[i]), *(len(r[i]) for r in full)) + 2 for i in kept)
    room = max(MIN_SIGNAL, width - len(indent) - others)
    names = screen_names([ln.signal for ln in lines], room, among or [])
    for row, ln in zip(full, lines, strict=True):
        row[0] = names[ln.signal]
    return [indent + row for row in fmt.layout([header, *full], right=list(RIGHT))]


def html(rep: Report, *, limit: int = LIMIT, top_stalls: int = TOP_STALLS) -> str:
    """The report as HTML for a notebook: per version the screen's signal table (values in
    human units, distributions folded, ``limit`` signals) and the stall reasons per sampler,
    top ``top_stalls`` first (``to_json()`` has every claim)."""
    import html as h

    from argusdb.answers import notebook
    from argusdb.answers.select import sampler_words

    by_version: dict[str, list[Claim]] = defaultdict(list)
    for c in rep.claims:
        by_version[c.program_version].append(c)
    by_id = {str(v["program_version"]): v for v in rep.versions}
    out = [f"<p><b>{h.escape(rep.region_id)}</b>: "
           f"{fmt.count(len(by_version), 'version')}, {fmt.count(len(rep.claims), 'claim')}</p>"]
    for v in rep.versions:
        claims = by_version.get(str(v["program_version"]), [])
        if not claims:
            continue
        lines = lines_of([c for c in claims if not c.signal.startswith("stall_")])
        shown = lines[:limit]
        out.append(f"<p>{h.escape(_version_title(v, by_id))}</p>")
        if shown:
            out.append(notebook.table(COLUMNS, table_rows(shown), right=RIGHT))
        if len(shown) < len(lines):
            out.append(f"<p>+ {len(lines) - len(shown):,} more signals (to_json(): every "
                       f"claim)</p>")
        stalls: dict[str, list[Claim]] = defaultdict(list)
        for c in claims:
            if c.signal.startswith("stall_"):
                stalls[c.sampler].append(c)
        for sampler, cs in sorted(stalls.items()):
            cs.sort(key=lambda c: (-c.value, c.signal))
            rest = len(cs) - min(len(cs), top_stalls)
            out.append(f"<p>stall reasons, {h.escape(sampler_words(sampler) or 'samples')}: "
                       + h.escape(", ".join(f"{c.signal.removeprefix('stall_')} "
                                            f"{fmt.number(c.value)}" for c in cs[:top_stalls]))
                       + (f" (+ {rest} more)" if rest else "") + "</p>")
    for m in rep.missing:
        out.append(f"<p>no evidence: {h.escape(m.get('signal', ''))}; to produce it: "
                   f"<code>{h.escape(m.get('request', ''))}</code></p>")
    return "".join(out)


def stall_breakdown(db: Connection, region: str, versions: list[str]
                    ) -> dict[str, dict[str, list[tuple[str, float, str | None]]]]:
    """Per version and collection (run kind), the stall reasons ``(signal, value, unit)``
    sorted by value: the median over the collection's runs of each run's attributed sum."""
    if not versions:
        return {}
    wanted = ", ".join(lit(v) for v in versions)
    rows = db.query(
        "SELECT e.program_version, r.kind, e.run_id, e.signal, any_value(e.unit) AS unit, "
        "sum(e.value) AS value FROM evidence e JOIN run r ON r.run_id = e.run_id "
        f"WHERE e.region_id = {lit(region)} AND e.program_version IN ({wanted}) "
        "AND e.evidence_class = 'attributed' AND e.signal LIKE 'stall\\_%' ESCAPE '\\' "
        "GROUP BY e.program_version, r.kind, e.run_id, e.signal").to_pylist()
    runs: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    units: dict[str, str | None] = {}
    for r in rows:
        runs[(r["program_version"], r["kind"], r["signal"])].append(float(r["value"]))
        units[r["signal"]] = r["unit"]
    out: dict[str, dict[str, list[tuple[str, float, str | None]]]] = defaultdict(dict)
    for (ver, kind, sig), vals in runs.items():
        out[ver].setdefault(kind, []).append((sig, statistics.median(vals), units[sig]))
    for by_kind in out.values():
        for reasons in by_kind.values():
            reasons.sort(key=lambda x: (-x[1], x[0]))
    return out


def _version_title(v: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    ver = str(v["program_version"])
    bits = [ver if v.get("label") in (None, ver) else f"{v['label']} ({ver})"]
    if v.get("transform"):
        bits.append(f"{str(v['transform']).split(':', 1)[0]} variant of "
                    f"{v.get('parent_version')}")
    elif v.get("program") is None and v.get("lines") is None:
        bits.append("timeline version")
    span = v.get("lines")
    if span:
        bits.append(f"lines {span['start_line']}-{span['end_line']}")
    return ", ".join(bits)


def summarise(db: Connection, rep: Report, *, all_rows: bool = False, limit: int = LIMIT,
              top_stalls: int = TOP_STALLS) -> list[str]:
    """The report as lines of text that fit a screen (see the module docstring)."""
    by_version: dict[str, list[Claim]] = defaultdict(list)
    for c in rep.claims:
        by_version[c.program_version].append(c)
    versions = [v for v in rep.versions if v["program_version"] in by_version]
    stalls = stall_breakdown(db, rep.region_id, [str(v["program_version"]) for v in versions])
    out = textwrap.wrap(
        f"{rep.region_id}: {fmt.count(len(versions), 'version')}, "
        f"{fmt.count(len(rep.claims), 'claim')} (--all: every signal and stall reason; "
        f"--detail: every claim; --json: every field, names in full)", fmt.SCREEN_WIDTH,
        subsequent_indent="  ", break_on_hyphens=False)
    by_id = {str(v["program_version"]): v for v in rep.versions}
    for v in versions:
        ver = str(v["program_version"])
        claims = by_version[ver]
        lines = lines_of([c for c in claims if not c.signal.startswith("stall_")])
        shown = lines if all_rows else lines[:limit]
        keys = cohort_keys(shown)
        title = _version_title(v, by_id)
        if shown and not keys:  # one cohort: said once
            title += f"; cohort {shown[0].cohort}"
        out += ["", *textwrap.wrap(title, fmt.SCREEN_WIDTH, subsequent_indent="  ",
                                   break_on_hyphens=False)]
        if shown:  # a report of stall reasons only has no signal table
            out += screen_table(shown, among=[c.signal for c in claims])
        if keys:
            out += textwrap.wrap("cohort " + "; ".join(f"{k}: {c}" for c, k in keys.items()),
                                 WIDTH, initial_indent="  ", subsequent_indent="    ",
                                 break_on_hyphens=False)
        if len(shown) < len(lines):
            out.append(f"  + {len(lines) - len(shown):,} more signals (--all)")
        asked = {c.signal for c in claims}  # the report's signals (--signal narrows them)
        for kind, every in sorted(stalls.get(ver, {}).items()):  # by collection
            reasons = [r for r in every if r[0] in asked]
            if not reasons:
                continue
            unit = reasons[0][2]
            top = reasons if all_rows else reasons[:top_stalls]
            rest = reasons[len(top):]
            zero = sum(1 for r in rest if r[1] == 0)
            more = (f" (+ {len(rest)} more" + (f", {zero} of them 0" if zero else "")
                    + ")") if rest else ""
            out += textwrap.wrap(
                f"stall reasons, {COLLECTION.get(kind, kind)} ({unit or 'samples'}): "
                + ", ".join(f"{s.removeprefix('stall_')} {fmt.number(x)}" for s, x, _ in top)
                + more, WIDTH, initial_indent="  ", subsequent_indent="    ",
                break_on_hyphens=False)
        why_of: dict[str, list[str]] = defaultdict(list)
        for ln in shown:
            for c in ln.claims:
                if c.verdict == "insufficient" and ln.signal not in why_of.get(c.reason, []):
                    why_of[c.reason].append(ln.signal)
        for why, sigs in why_of.items():
            out += textwrap.wrap(f"insufficient ({', '.join(sigs)}): {why}", WIDTH,
                                 initial_indent="  ", subsequent_indent="    ",
                                 break_on_hyphens=False)
    for m in rep.missing:
        out += ["", f"no evidence: {m['signal']}", f"  to produce it: {m['request']}"]
    return out
