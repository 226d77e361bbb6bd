"""HTML of answers for Jupyter: what ``Report``, ``DiffResult`` and ``Trajectory`` show as
``_repr_html_``. One self-contained table each (no scripts, no network), numbers right-aligned
and grouped the way the CLI prints them, steps coloured by the signal's direction.

Example:
    >>> html = table(["signal", "median"], [["duration", 210814.5]])
    >>> "<td style='text-align:right'>210,814.5</td>" in html
    True
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from argusdb.answers import format as fmt
from argusdb.answers.direction import step_class

if TYPE_CHECKING:
    from argusdb.answers.diff import DiffResult
    from argusdb.answers.report import Report
    from argusdb.answers.trajectory import Trajectory

#: Colours of a step's verdict cell by what it means for the signal.
_COLOURS = {"better": "#070", "worse": "#b00", "changed": "#05a"}


def _cell(v: Any) -> str:
    style = " style='text-align:right'" if fmt.is_number(v) else ""
    return f"<td{style}>{html.escape(fmt.number(v))}</td>"


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]],
          row_styles: Sequence[str] | None = None) -> str:
    """An HTML table; ``row_styles`` colours each row's last cell (CSS colour or '')."""
    out = ["<table class='argus'><tr>" + "".join(f"<th>{html.escape(c)}</th>"
                                                 for c in columns) + "</tr>"]
    for i, r in enumerate(rows):
        cells = [_cell(v) for v in r]
        colour = row_styles[i] if row_styles else ""
        if colour and cells:
            cells[-1] = cells[-1].replace("<td", f"<td style='color:{colour}'", 1)
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def report_html(rep: Report) -> str:
    """A report's claims: region, signal, median, unit, class, n, CI, verdict."""
    rows = [[c.region_id, c.signal, c.median, c.unit, c.evidence_class, c.n, c.ci_low,
             c.ci_high, c.verdict] for c in rep.claims]
    head = f"<p><b>{html.escape(rep.region_id)}</b>: {len(rep.claims)} claims</p>"
    missing = "".join(f"<p>missing {html.escape(m.get('signal', ''))}: "
                      f"<code>{html.escape(m.get('request', ''))}</code></p>"
                      for m in rep.missing)
    return head + table(["region", "signal", "median", "unit", "class", "n", "CI low",
                         "CI high", "verdict"], rows) + missing


def diff_html(d: DiffResult) -> str:
    """A diff's rows, the verdict coloured by the signal's direction."""
    rows = [[r.signal, r.unit, r.from_median, r.to_median, r.ratio, r.ci_low, r.ci_high,
             r.p_value, r.verdict] for r in d.rows]
    colours = [_COLOURS.get(step_class(r.signal, r.unit, r.ratio, r.significant), "")
               for r in d.rows]
    head = (f"<p><b>{html.escape(d.region_id)}</b>: {html.escape(d.from_ref.label)} → "
            f"{html.escape(d.to_ref.label)}</p>")
    return head + table(["signal", "unit", "from median", "to median", "ratio", "CI low",
                         "CI high", "p", "verdict"], rows, colours)


def trajectory_html(t: Trajectory) -> str:
    """One row per (series, version): median, CI and the step from the previous version."""
    rows: list[list[Any]] = []
    colours: list[str] = []
    for s in t.series:
        for p in s.points:
            rows.append([s.region_id, s.signal, s.unit, p.label, p.median, p.ci_low,
                         p.ci_high, p.step_ratio, p.step_verdict])
            colours.append(_COLOURS.get(step_class(s.signal, s.unit, p.step_ratio,
                                                   p.step_significant), ""))
    return table(["region", "signal", "unit", "version", "median", "CI low", "CI high",
                  "step ratio", "step"], rows, colours)
