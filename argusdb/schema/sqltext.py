"""SQL text that library code writes: string literals and lists of them.

Read paths bind no parameters where a literal does (binding one makes DuckDB's Python client
import pandas: a third of a small query's start), so every literal goes through
:func:`literal`, once, here.

Example:
    >>> literal("it's")
    "'it''s'"
    >>> literal_list(["a", "b"])
    "'a', 'b'"
    >>> literal_list([])
    'NULL'
    >>> inline("SELECT ? WHERE a = '?' AND b IN ?", [1.5, ["x", None]])
    "SELECT CAST(1.5 AS DOUBLE) WHERE a = '?' AND b IN [CAST('x' AS VARCHAR), NULL]"
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def literal(value: Any) -> str:
    """A SQL string literal of ``str(value)`` (single quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def literal_list(values: Iterable[Any]) -> str:
    """Comma-separated string literals, for ``IN (...)``; ``NULL`` when there are none (an
    ``IN (NULL)`` matches nothing)."""
    return ", ".join(literal(v) for v in values) or "NULL"


def _sql_value(v: Any) -> str | None:
    """``v`` as a SQL literal of the type DuckDB binds it as, or None where it is not a plain
    value (``None``, bool, int, float, str without NUL, or a non-empty list of them)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        f = float(v)
        text = float.__repr__(f) if math.isfinite(f) else literal(f)
        return f"CAST({text} AS DOUBLE)"
    if isinstance(v, str):  # a NUL ends DuckDB's literal: such text stays bound
        return None if "\x00" in v else f"CAST({literal(v)} AS VARCHAR)"
    if isinstance(v, list | tuple) and v:
        items = [_sql_value(x) for x in v]
        if any(i is None or i.startswith("[") for i in items):
            return None
        return "[" + ", ".join(i for i in items if i is not None) + "]"
    return None


def inline(query: str, params: Sequence[Any]) -> str | None:
    """``query`` with each ``?`` placeholder (outside quotes and comments) replaced by the
    literal of its parameter, or None where that cannot be done exactly (another kind of
    placeholder, a count that does not match, a value that is not plain): the caller binds
    the parameters then. Library code's reads bind nothing so (:func:`literal`)."""
    values = [_sql_value(v) for v in params]
    if any(v is None for v in values) or "$" in query:
        return None
    out: list[str] = []
    i, n, k = 0, len(query), 0
    while i < n:
        c = query[i]
        if c in "'\"":
            j = i + 1
            while j < n and not (query[j] == c and (j + 1 >= n or query[j + 1] != c)):
                j += 2 if query[j] == c else 1
            out.append(query[i:j + 1])
            i = j + 1
        elif query.startswith("--", i) or query.startswith("/*", i):
            j = query.find("\n" if c == "-" else "*/", i + 2)
            j = n if j < 0 else j + (1 if c == "-" else 2)
            out.append(query[i:j])
            i = j
        elif c == "?":
            if k >= len(values):
                return None
            out.append(str(values[k]))
            k += 1
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out) if k == len(values) else None
