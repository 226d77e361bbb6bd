"""A query's own predicates and keys, re-aimed at metadata columns, and a small evaluator.

The provenance pass reuses the query's simple predicates on one FROM item (``e.signal =
'duration'``) over that item's metadata summary. A :class:`Pred` keeps the query's own
expression and which metadata column each of its column references reads, without copying
the tree; :meth:`Pred.sql` renders it for DuckDB, and :func:`evaluate` evaluates the common
shapes (comparisons, IN, IS NULL, LIKE, AND/OR/NOT over literals and columns, SQL's
three-valued logic) directly over summary rows in Python, which is faster than a round trip
to the engine for a summary of a few hundred rows. Anything else raises :class:`NotSimple`
and goes to DuckDB.

Example:
    >>> p = Pred(sqlglot.parse_one("e.signal = 'duration'"), ["signal"])
    >>> p.sql(), evaluate(p, {"signal": "duration"})
    ("signal = 'duration'", True)
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp


class NotSimple(Exception):
    """The expression needs the engine."""


@dataclass
class Pred:
    """An expression of the query with its column references re-aimed at metadata columns.

    Attributes:
        node: the expression (the query's own tree, not a copy: do not mutate it).
        names: metadata column read by each column reference, in ``find_all`` order.
    """

    node: Any
    names: list[str]
    _sql: str | None = field(default=None, repr=False)
    _by_id: dict[int, str] | None = field(default=None, repr=False)

    def sql(self) -> str:
        """The expression over metadata columns, as DuckDB SQL."""
        if self._sql is None:
            new = self.node.copy()
            if isinstance(new, exp.Column):
                new = exp.column(self.names[0])
            else:
                for c, n in zip(list(new.find_all(exp.Column)), self.names, strict=True):
                    c.replace(exp.column(n))
            self._sql = new.sql(dialect="duckdb")
        return self._sql

    def by_id(self) -> dict[int, str]:
        if self._by_id is None:
            cols = [self.node] if isinstance(self.node, exp.Column) else list(
                self.node.find_all(exp.Column))
            self._by_id = {id(c): n for c, n in zip(cols, self.names, strict=True)}
        return self._by_id


_CMP: dict[Any, Any] = {exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.GT: operator.gt,
                        exp.GTE: operator.ge, exp.LT: operator.lt, exp.LTE: operator.le}


def evaluate(p: Pred, row: dict[str, Any]) -> Any:
    """Value of ``p`` over one metadata row (None for SQL NULL); raises NotSimple."""
    return _ev(p.node, row, p.by_id())


def _ev(n: Any, row: dict[str, Any], m: dict[int, str]) -> Any:
    if isinstance(n, exp.Paren):
        return _ev(n.this, row, m)
    if isinstance(n, exp.Column):
        return row[m[id(n)]]
    if isinstance(n, exp.Literal):
        return n.this if n.is_string else float(n.this)
    if isinstance(n, exp.Boolean):
        return bool(n.this)
    if isinstance(n, exp.Null):
        return None
    if isinstance(n, exp.And | exp.Or):
        a, b = _ev(n.left, row, m), _ev(n.right, row, m)
        if isinstance(n, exp.And):
            return False if a is False or b is False else (None if None in (a, b) else True)
        return True if a is True or b is True else (None if None in (a, b) else False)
    if isinstance(n, exp.Not):
        v = _ev(n.this, row, m)
        return None if v is None else not _truth(v)
    if type(n) in _CMP:
        a, b = _ev(n.left, row, m), _ev(n.right, row, m)
        if a is None or b is None:
            return None
        return _CMP[type(n)](*_same(a, b))
    if isinstance(n, exp.In) and not n.args.get("query") and not n.args.get("unnest"):
        a = _ev(n.this, row, m)
        vals = [_ev(x, row, m) for x in n.expressions]
        if a is None:
            return None
        if any(v is not None and operator.eq(*_same(a, v)) for v in vals):
            return True
        return None if None in vals else False
    if isinstance(n, exp.Is) and isinstance(n.expression, exp.Null):
        return _ev(n.this, row, m) is None
    if isinstance(n, exp.Like | exp.ILike) and isinstance(n.expression, exp.Literal) \
            and not n.args.get("escape"):
        a = _ev(n.this, row, m)
        if a is None:
            return None
        if not isinstance(a, str):
            raise NotSimple("LIKE on a non-string")
        return _like(n.expression.this, isinstance(n, exp.ILike)).fullmatch(a) is not None
    raise NotSimple(type(n).__name__)


def _truth(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    raise NotSimple("not a boolean")


def _same(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, bool) or isinstance(b, bool):
        if isinstance(a, bool) and isinstance(b, bool):
            return a, b
        raise NotSimple("boolean against another type")
    if isinstance(a, str) != isinstance(b, str):
        raise NotSimple("string against a number")
    return a, b


def _like(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.compile(rx, re.S | (re.I if ignore_case else 0))
