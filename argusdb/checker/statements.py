"""Statements the checker answers by rewriting them: schema discovery and PIVOT.

An engineer's first questions are about the schema (``DESCRIBE evidence``, ``SHOW TABLES``,
``SELECT ... FROM information_schema.columns``); they are answered from DuckDB's
``information_schema`` (whose column and table comments are the catalog's documentation),
never refused as if they wrote. A ``PIVOT`` groups by its ``GROUP BY`` and ``ON`` columns
and aggregates with its ``USING`` functions: the checker judges the equivalent grouped
``SELECT`` and runs the PIVOT itself, with its ``ON`` values spelled out (``ON signal IN
(...)``) so that DuckDB plans it as a read-only SELECT.

Example:
    >>> rewrite(sqlglot.parse_one("SHOW TABLES", read="duckdb"))[0].sql()[:30]
    'SELECT table_name AS name, tab'
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

_SHOW_TABLES = r"""
SELECT table_name AS name, table_type AS kind, table_comment AS description
FROM information_schema.tables
WHERE table_schema = 'main' AND table_name NOT LIKE '\_%' ESCAPE '\'
ORDER BY name"""
_DESCRIBE = """
SELECT column_name, data_type AS column_type, is_nullable AS "null",
       column_comment AS description
FROM information_schema.columns
WHERE table_schema = 'main' AND table_name = {name}
ORDER BY ordinal_position"""


def rewrite(stmt: Any) -> tuple[Any, Any] | None:
    """(tree to check, tree to run) for a statement answered by rewriting; None otherwise."""
    if isinstance(stmt, exp.Show) and str(stmt.this).upper() in ("TABLES", "ALL TABLES"):
        sel = sqlglot.parse_one(_SHOW_TABLES, read="duckdb")
        return sel, sel
    if isinstance(stmt, exp.Describe) and isinstance(stmt.this, exp.Table) \
            and not stmt.this.args.get("db") and isinstance(stmt.this.this, exp.Identifier):
        from argusdb.checker.resolve import relation_of

        table = stmt.this
        if relation_of(table).kind not in ("table", "view"):
            # unknown names get the names rule's refusal, with its suggestions
            probe = exp.select("*").from_(table.copy()).limit(0)
            return probe, probe
        name = exp.Literal.string(table.name.lower()).sql(dialect="duckdb")
        desc = sqlglot.parse_one(_DESCRIBE.format(name=name), read="duckdb")
        return desc, desc
    if isinstance(stmt, exp.Pivot) and stmt.args.get("using") and not stmt.args.get("unpivot"):
        return _pivot_select(stmt), stmt
    return None


def _pivot_select(p: exp.Pivot) -> exp.Select:
    """``PIVOT src ON c USING f(x) GROUP BY g`` as ``SELECT g, c, f(x) FROM src GROUP BY g, c``."""
    on = [e.this if isinstance(e, exp.In) else e for e in p.expressions]
    group = list(p.args["group"].expressions) if p.args.get("group") else []
    src: Any = p.this
    sel = exp.select(*[g.copy() for g in group], *[c.copy() for c in on],
                     *[u.copy() for u in p.args["using"]])
    sel = sel.from_(src.copy()) if not isinstance(src, exp.Select) else \
        sel.from_(exp.Subquery(this=src.copy()))
    listed = [e.copy() for e in p.expressions if isinstance(e, exp.In)]
    if listed:  # ON c IN (...) reads only the rows of the listed values
        sel = sel.where(exp.and_(*listed))
    if group or on:
        sel = sel.group_by(*[g.copy() for g in group], *[c.copy() for c in on])
    return sel


def pivot_values(p: exp.Pivot, values: Any) -> exp.Pivot | None:
    """The PIVOT with every ``ON`` column's values listed (``values(sql)`` gives the distinct
    values of one column of the source); None when they cannot be had."""
    out = p.copy()
    src: Any = p.this
    source = src.sql(dialect="duckdb") if not isinstance(src, exp.Select) else \
        f"({src.sql(dialect='duckdb')})"
    new = []
    for e in out.expressions:
        if isinstance(e, exp.In):
            new.append(e)
            continue
        vals = values(f"SELECT DISTINCT {e.sql(dialect='duckdb')} FROM {source} ORDER BY 1")
        if vals is None:
            return None
        lits = [exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)
                for v in vals if v is not None]
        if not lits:
            return None
        new.append(exp.In(this=e, expressions=lits))
    out.set("expressions", new)
    return out
