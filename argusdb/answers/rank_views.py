"""Per-rank views of a program's launches for ``argus report`` and the dashboard.

- :func:`rank_section`: the launch groups of a program (or of some of its versions), each with
  one row per rank (``rank_overview``: step time, overlap, exposed communication, arrivals at
  collectives, the critical rank, clock offset and its error), clean launches first;
- :func:`timeline_svg`: a few steps of one launch group as an SVG, one lane per rank and
  track (stream or host thread), on the reference rank's clock (``clock_alignment``); the
  Perfetto export of the same intervals is :func:`argusdb.answers.ranks.launch_trace`.

Example:
    >>> sec = rank_section(store, "tp_block")  # doctest: +SKIP
    >>> [g["launch_group"] for g in sec][:1]  # doctest: +SKIP
    ['xl-overlap-events-1']
"""

from __future__ import annotations

import io
from typing import Any

from argusdb.errors import UsageError
from argusdb.store.embedded import Store

#: Lane colours per interval role.
ROLE_COLORS = {"compute": "#1f77b4", "communication": "#d62728", "host": "#7f7f7f",
               "step": "#2ca02c"}


def rank_section(store: Store, program: str, launch_group: str | None = None,
                 versions: list[str] | None = None) -> list[dict[str, Any]]:
    """Launch groups of ``program`` with their per-rank rows (clean launches first).

    Raises:
        UsageError: ``launch_group`` is given and is not one of the program's.
    """
    # rank_overview's plan (steps, overlap, arrivals, clock alignment) costs ~0.1 s to bind;
    # a program none of whose runs is a rank of a launch has none of its rows
    if not store.rows("SELECT 1 FROM run AS r JOIN program_version AS v USING "
                      "(program_version) WHERE v.program = ? AND r.launch_group IS NOT NULL "
                      "AND r.rank IS NOT NULL LIMIT 1", [program]):
        groups: list[dict[str, Any]] = []
    else:
        groups = store.rows(
            "SELECT o.launch_group, any_value(o.program_version) AS program_version, "
            "any_value(o.world_size) AS world_size, any_value(o.collector) AS collector, "
            "any_value(o.signature) AS signature, bool_and(o.timing_clean) AS timing_clean, "
            "bool_and(o.forced_wait) AS forced_wait FROM rank_overview AS o "
            "JOIN program_version AS v USING (program_version) WHERE v.program = ? "
            "AND (? IS NULL OR list_contains(?, o.program_version)) GROUP BY o.launch_group "
            "ORDER BY bool_and(o.timing_clean) DESC, bool_and(o.forced_wait), o.launch_group",
            [program, versions, versions])
    if launch_group is not None:
        known = [g["launch_group"] for g in groups]
        groups = [g for g in groups if g["launch_group"] == launch_group]
        if not groups:
            import difflib

            close = difflib.get_close_matches(launch_group, known, n=2, cutoff=0.5)
            raise UsageError(f"--launch-group {launch_group}: no launch group of program "
                             f"{program} with per-rank steps"
                             + (f"; did you mean {' or '.join(close)}?" if close else
                                f"; known: {', '.join(known) or 'none'}"))
    for g in groups:
        g["ranks"] = store.rows(
            "SELECT rank, run_id, n_steps, step_ns, comm_ns, overlap_ns, exposed_comm_ns, "
            "n_last_to_arrive, n_instances, total_wait_ns, is_critical, clock_offset_ns, "
            "clock_error_ns FROM rank_overview WHERE launch_group = ? ORDER BY rank",
            [g["launch_group"]])
        crit = [r["rank"] for r in g["ranks"] if r["is_critical"]]
        g["critical_rank"] = crit[0] if crit else None
        steps = any(r["n_steps"] for r in g["ranks"])
        g["use"] = ("step time and overlap" if g["timing_clean"] and steps else
                    "kernel and collective timing (no step ranges)" if g["timing_clean"] else
                    "derivation only (perturbed variant)" if g["forced_wait"] else
                    "timeline only (not timing-clean)")
    # timing-clean launches with steps first (the default timeline), then by name
    groups.sort(key=lambda g: (not g["timing_clean"], bool(g["forced_wait"]),
                               g["use"] != "step time and overlap", g["launch_group"]))
    return groups


def _first(groups: list[dict[str, Any]], program: str, option: str) -> str:
    if not groups:
        raise UsageError(f"--{option}: program {program} has no launch groups (observe it with "
                         "'argus observe ... -- torchrun ...')")
    return str(groups[0]["launch_group"])


def write_timeline(store: Store, groups: list[dict[str, Any]], program: str,
                   path: str) -> str:
    """Write the timeline SVG of the first of ``groups`` (clean ones come first) to ``path``;
    returns its launch group.

    Raises:
        UsageError: the program has no launch groups.
    """
    lg = _first(groups, program, "timeline")
    svg = timeline_svg(store, lg)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(svg)
    return lg


def write_perfetto(store: Store, groups: list[dict[str, Any]], program: str,
                   path: str) -> str:
    """Write the first of ``groups`` as Perfetto JSON (:func:`answers.launch_trace`) to
    ``path``; returns its launch group.

    Raises:
        UsageError: the program has no launch groups.
    """
    from argusdb.answers.ranks import launch_trace
    from argusdb.answers.wire import dump

    lg = _first(groups, program, "perfetto")
    doc = launch_trace(store, lg)
    with open(path, "w", encoding="utf-8") as fh:
        dump(doc, fh)
    return lg


def _window(store: Store, launch_group: str, first_step: int,
            n_steps: int) -> tuple[int, int, str]:
    got = store.rows(
        "SELECT min(aligned_start_ns) AS a, max(aligned_end_ns) AS b FROM interval_event "
        "WHERE launch_group = ? AND kind = 'step' AND domain = 'trace' AND step BETWEEN ? AND ?",
        [launch_group, first_step, first_step + n_steps - 1])
    if got and got[0]["a"] is not None:
        return int(got[0]["a"]), int(got[0]["b"]), \
            f"steps {first_step}–{first_step + n_steps - 1}"
    # No step ranges (a CUPTI-only trace): the middle collectives of the lowest rank, as many
    # instances as two steps would hold at most.
    got = store.rows(
        "WITH c AS (SELECT aligned_start_ns AS s, aligned_end_ns AS e, row_number() OVER "
        "(ORDER BY aligned_start_ns) AS k, count(*) OVER () AS n FROM interval_event "
        "WHERE launch_group = ? AND kind = 'collective' AND domain = 'trace' AND rank = "
        "(SELECT min(rank) FROM interval_event WHERE launch_group = ?)) "
        "SELECT min(s) AS a, max(e) AS b FROM c WHERE k BETWEEN n // 2 AND n // 2 + ?",
        [launch_group, launch_group, 4 * n_steps])
    what = "middle collectives (no step ranges)"
    if not got or got[0]["a"] is None:
        what = "whole launch"
        got = store.rows("SELECT min(aligned_start_ns) AS a, max(aligned_end_ns) AS b "
                         "FROM interval_event WHERE launch_group = ? AND domain = 'trace'",
                         [launch_group])
    if not got or got[0]["a"] is None:
        raise UsageError(f"launch group {launch_group!r} has no intervals; list launch groups "
                         "with 'argus report STORE --region PROGRAM/step'")
    return int(got[0]["a"]), int(got[0]["b"]), what


def describe(groups: list[dict[str, Any]]) -> list[str]:
    """Text lines of :func:`rank_section`: one block per launch group, one line per rank."""
    lines: list[str] = []
    for g in groups:
        lines.append(f"launch {g['launch_group']} ({g['world_size']} ranks, {g['collector']}, "
                     f"{g['signature']}: {g['use']}); critical rank {g['critical_rank']}")
        for r in g["ranks"]:
            def us(v: Any) -> str:
                return "–" if v is None else f"{v / 1e3:,.1f}"
            lines.append(f"  rank {r['rank']}: step {us(r['step_ns'])} us, comm "
                         f"{us(r['comm_ns'])} us, overlap {us(r['overlap_ns'])} us, exposed "
                         f"{us(r['exposed_comm_ns'])} us, last to arrive {r['n_last_to_arrive']}"
                         f"/{r['n_instances']}, waited {us(r['total_wait_ns'])} us, clock error "
                         f"{us(r['clock_error_ns'])} us" + (" (critical)" if r["is_critical"]
                                                            else ""))
    return lines


def timeline_svg(store: Store, launch_group: str, first_step: int = 1,
                 n_steps: int = 2) -> str:
    """SVG of steps ``first_step`` .. ``first_step + n_steps - 1`` of one launch group.

    Raises:
        UsageError: the launch group has no intervals, or matplotlib is missing.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise UsageError(f"the timeline needs matplotlib ({exc}); pip install "
                         "'argusdb[dashboard]', or write the Perfetto trace instead "
                         "(argus launch trace)") from exc
    a, b, what = _window(store, launch_group, first_step, n_steps)
    rows = store.rows(
        "SELECT rank, coalesce(track, kind) AS track, kind, role, name, aligned_start_ns AS s, "
        "aligned_end_ns AS e FROM interval_event WHERE launch_group = ? AND domain = 'trace' "
        "AND aligned_start_ns < ? AND aligned_end_ns > ? AND kind <> 'annotation' "
        "ORDER BY rank, track, s", [launch_group, b, a])
    lanes: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in rows:
        lane = "steps" if r["kind"] == "step" else str(r["track"])
        lanes.setdefault((int(r["rank"]), lane), []).append(r)
    keys = sorted(lanes)
    fig = Figure(figsize=(10.0, 0.9 + 0.32 * len(keys)))
    ax = fig.subplots()
    for y, key in enumerate(keys):
        for role in ROLE_COLORS:
            spans = [((max(r["s"], a) - a) / 1e3, (min(r["e"], b) - max(r["s"], a)) / 1e3)
                     for r in lanes[key] if r["role"] == role]
            if spans:
                ax.broken_barh(spans, (y - 0.38, 0.76), color=ROLE_COLORS[role], linewidth=0,
                               alpha=0.5 if role == "step" else 0.9)
    ax.set_yticks(range(len(keys)), [f"rank {k[0]} · {k[1]}" for k in keys], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, (b - a) / 1e3)
    ax.set_xlabel("µs from the window's start, reference rank's clock (clock_alignment)")
    ax.set_title(f"{launch_group}: {what}, one lane per rank and track", fontsize=9,
                 loc="left")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=c, label=k) for k, c in ROLE_COLORS.items()], fontsize=7,
              loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=4, frameon=False)
    fig.tight_layout()
    buf = io.StringIO()
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # labels stay text: searchable
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def dashboard_section(store: Store, program: str) -> str:
    """HTML of a program's launches for the dashboard: per launch group a table of ranks and,
    for the first timing-clean launch of each version, its per-rank timeline (inline SVG)."""
    import html

    groups = rank_section(store, program)
    if not groups:
        return ""
    e = html.escape

    from argusdb.answers import format as fmt

    def us(v: Any) -> str:  # each time with its unit, as every answer writes it
        return fmt.quantity(v, "ns")

    parts = ["<section class='ranks'><h3>Ranks (distributed launches)</h3>",
             *_observed_lead(store, groups),
             "<p class='note'>step time, overlap and exposed communication are read from "
             "timing-clean launches only; forced launches feed the derivation; profiler "
             "launches the timeline. Medians over steps ≥ 1.</p>",
             "<table class='rank-table'><tr><th>launch group</th><th>version</th><th>use</th>"
             "<th>rank</th><th>step</th><th>communication</th><th>overlap</th>"
             "<th>exposed</th><th>last to arrive</th><th>waited</th><th>clock error</th>"
             "</tr>"]
    for g in groups:
        for r in g["ranks"]:
            crit = " <b>critical</b>" if r["is_critical"] else ""
            parts.append(
                f"<tr><td>{e(g['launch_group'])}</td><td>{e(g['program_version'])}</td>"
                f"<td>{e(g['use'])}</td><td class='num'>{r['rank']}{crit}</td>"
                f"<td class='num'>{us(r['step_ns'])}</td><td class='num'>{us(r['comm_ns'])}</td>"
                f"<td class='num'>{us(r['overlap_ns'])}</td>"
                f"<td class='num'>{us(r['exposed_comm_ns'])}</td>"
                f"<td class='num'>{r['n_last_to_arrive']}/{r['n_instances']}</td>"
                f"<td class='num'>{us(r['total_wait_ns'])}</td>"
                f"<td class='num'>{us(r['clock_error_ns'])}</td></tr>")
    parts.append("</table>")
    shown: set[str] = set()
    for g in groups:
        if g["timing_clean"] and g["program_version"] not in shown:
            shown.add(g["program_version"])
            parts.append(f"<div class='chart timeline-chart'>"
                         f"{timeline_svg(store, g['launch_group'])}</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _observed_lead(store: Store, groups: list[dict[str, Any]]) -> list[str]:
    """The clean observed result first: step time and exposed communication per step of the
    first two versions with timing-clean launches, with the diff's ratio, CI and verdict
    (what ``argus launch diff`` prints), before any derived value."""
    import html

    from argusdb.answers import format as fmt
    from argusdb.answers.ranks import collective_rows

    clean = list(dict.fromkeys(str(g["program_version"]) for g in groups if g["timing_clean"]))
    if len(clean) < 2:
        return []
    # in recording order (the first run of each version), named by their options
    facts = {str(r["program_version"]): r for r in store.rows(
        "SELECT r.program_version, min(r.run_seq) AS seq, any_value(p.options)::VARCHAR AS o "
        "FROM run r JOIN program_version p USING (program_version) "
        "WHERE list_contains(?, r.program_version) GROUP BY r.program_version", [clean])}
    clean.sort(key=lambda v: int(facts[v]["seq"]) if v in facts else 0)
    a, b = clean[:2]
    rows = [r for r in collective_rows(store, a, b)
            if r["quantity"] in ("step_time", "exposed_communication")]
    if not rows:
        return []
    items = []
    for r in rows:
        verdict = "significant" if r["significant"] else "not significant"
        items.append(f"<li><b>{html.escape(str(r['quantity']))}</b>: "
                     f"{fmt.quantity(r['from_median_ns'], 'ns')} → "
                     f"{fmt.quantity(r['to_median_ns'], 'ns')}, ratio {fmt.ratio(r['ratio'])} "
                     f"{fmt.interval(r['ci_low'], r['ci_high'])}, {verdict}</li>")
    def name(v: str) -> str:
        import json

        opts = json.loads(facts[v]["o"] or "{}") if v in facts else {}
        shown = ", ".join(f"{k}={x}" for k, x in sorted(opts.items())
                          if k not in ("target", "triton", "cuda"))
        return f"{shown} ({v})" if shown else v

    return [f"<p class='lead'>Observed on timing-clean launches, {html.escape(name(a))} → "
            f"{html.escape(name(b))} (per step, medians):</p><ul class='lead'>", *items,
            "</ul>"]
