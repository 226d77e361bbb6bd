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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def literal(value: Any) -> str:
    """A SQL string literal of ``str(value)`` (single quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def literal_list(values: Iterable[Any]) -> str:
    """Comma-separated string literals, for ``IN (...)``; ``NULL`` when there are none (an
    ``IN (NULL)`` matches nothing)."""
    return ", ".join(literal(v) for v in values) or "NULL"
