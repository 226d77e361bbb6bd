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

from argusdb.answers import format as fmt

#: Colours of a step's verdict cell by what it means for the signal.
COLOURS = {"better": "#070", "worse": "#b00", "changed": "#05a"}


def _cell(v: Any, right: bool = False) -> str:
    style = " style='text-align:right'" if right or fmt.is_number(v) else ""
    return f"<td{style}>{html.escape(fmt.number(v))}</td>"


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]],
          row_styles: Sequence[str] | None = None, right: Sequence[bool] | None = None) -> str:
    """An HTML table; ``row_styles`` colours each row's last cell (CSS colour or '');
    ``right`` right-aligns columns of cells already formatted as text (values with units)."""
    out = ["<table class='argus'><tr>" + "".join(f"<th>{html.escape(c)}</th>"
                                                 for c in columns) + "</tr>"]
    for i, r in enumerate(rows):
        cells = [_cell(v, bool(right and right[j])) for j, v in enumerate(r)]
        colour = row_styles[i] if row_styles else ""
        if colour and cells:
            cells[-1] = cells[-1].replace("<td", f"<td style='color:{colour}'", 1)
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)
