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
    _fn: Any = field(default=None, repr=False)

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
    """Value of ``p`` over one metadata row (None for SQL NULL); raises NotSimple.

    The expression is compiled once per Pred into nested closures (the checks filter a
    summary of hundreds of rows per FROM item, and walking the tree per row was a fifth
    of a check); a shape the closures do not cover raises NotSimple, as :func:`_ev` does.
    """
    if p._fn is None:
        p._fn = _compile(p.node, p.by_id())
    return p._fn(row)


Fn = Any  # Callable[[dict[str, Any]], Any]


def _compile(n: Any, m: dict[int, str]) -> Fn:
    """``n`` as a function of a metadata row; ``m`` maps each column node to its column."""
    while isinstance(n, exp.Paren):
        n = n.this
    if isinstance(n, exp.Column):
        name = m[id(n)]
        return lambda row: row[name]
    if isinstance(n, exp.Literal | exp.Boolean | exp.Null):
        const = None if isinstance(n, exp.Null) else bool(n.this) if isinstance(
            n, exp.Boolean) else n.this if n.is_string else float(n.this)
        return lambda row: const
    if isinstance(n, exp.And | exp.Or):
        fa, fb = _compile(n.left, m), _compile(n.right, m)
        if isinstance(n, exp.And):
            def and_(row: dict[str, Any]) -> Any:
                a, b = fa(row), fb(row)
                return False if a is False or b is False else (None if None in (a, b) else True)
            return and_

        def or_(row: dict[str, Any]) -> Any:
            a, b = fa(row), fb(row)
            return True if a is True or b is True else (None if None in (a, b) else False)
        return or_
    if isinstance(n, exp.Not):
        f = _compile(n.this, m)

        def not_(row: dict[str, Any]) -> Any:
            v = f(row)
            return None if v is None else not _truth(v)
        return not_
    if type(n) in _CMP:
        cmp, fa, fb = _CMP[type(n)], _compile(n.left, m), _compile(n.right, m)

        def compare(row: dict[str, Any]) -> Any:
            a, b = fa(row), fb(row)
            if a is None or b is None:
                return None
            return cmp(*_same(a, b))
        return compare
    if isinstance(n, exp.In) and not n.args.get("query") and not n.args.get("unnest"):
        return _compile_in(n, m)
    if isinstance(n, exp.Is) and isinstance(n.expression, exp.Null):
        f = _compile(n.this, m)
        return lambda row: f(row) is None
    if isinstance(n, exp.Like | exp.ILike) and isinstance(n.expression, exp.Literal) \
            and not n.args.get("escape"):
        f, rx = _compile(n.this, m), _like(n.expression.this, isinstance(n, exp.ILike))

        def like(row: dict[str, Any]) -> Any:
            a = f(row)
            if a is None:
                return None
            if not isinstance(a, str):
                raise NotSimple("LIKE on a non-string")
            return rx.fullmatch(a) is not None
        return like
    raise NotSimple(type(n).__name__)


def _compile_in(n: exp.In, m: dict[int, str]) -> Fn:
    fa = _compile(n.this, m)
    consts = _literals(n)
    fvals = None if consts is not None else [_compile(x, m) for x in n.expressions]

    def in_(row: dict[str, Any]) -> Any:
        a = fa(row)
        if a is None:
            return None
        vals: list[Any] = [f(row) for f in fvals] if fvals is not None else consts or []
        if any(v is not None and operator.eq(*_same(a, v)) for v in vals):
            return True
        return None if None in vals else False
    return in_


_LITERAL_LISTS: dict[int, tuple[exp.In, list[Any]]] = {}


def _literals(n: exp.In) -> list[Any] | None:
    """The values of an IN list made only of literals, computed once per node."""
    hit = _LITERAL_LISTS.get(id(n))
    if hit is not None and hit[0] is n:
        return hit[1]
    if not all(isinstance(x, exp.Literal) for x in n.expressions):
        return None
    vals = [x.this if x.is_string else float(x.this) for x in n.expressions]
    if len(_LITERAL_LISTS) > 1024:
        _LITERAL_LISTS.clear()
    _LITERAL_LISTS[id(n)] = (n, vals)
    return vals


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
