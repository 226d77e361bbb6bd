"""HTML tables of answers for Jupyter: what ``Report``, ``DiffResult`` and ``Trajectory``
build their ``_repr_html_`` with. One self-contained table each (no scripts, no network),
numbers right-aligned and grouped the way the CLI prints them, steps coloured by the signal's
direction (:data:`COLOURS`).

Example:
    >>> html = table(["signal", "median"], [["duration", 210814.5]])
    >>> "<td style='text-align:right'>210,814.5</td>" in html
    True
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

#: Colours of a step's verdict cell by what it means for the signal.
COLOURS = {"better": "#070", "worse": "#b00", "changed": "#05a"}


def _cell(v: Any) -> str:
    from argusdb.cli.output import _fmt, _is_number

    text = "–" if v is None else _fmt(v)
    style = " style='text-align:right'" if _is_number(v) else ""
    return f"<td{style}>{html.escape(text)}</td>"


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
