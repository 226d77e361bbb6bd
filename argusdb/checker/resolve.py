"""The resolver: relations and columns of every scope against the catalog.

Names are resolved the way DuckDB resolves them: a FROM item is a CTE, a table or view of the
catalog (``schema/`` and ``queries/``), an evidence-aware construct, or an allowed table
function; a column belongs to exactly one source of its scope (or of an enclosing scope, for a
correlated subquery), to a select-list alias, or to a lambda parameter. Whatever cannot be
resolved becomes an AR06/AR07 finding with "did you mean" suggestions (difflib).

Example:
    >>> rel = relation_of(sqlglot.parse_one("SELECT 1 FROM evidence").find(exp.Table))
    >>> rel.kind, "value" in rel.columns
    ('view', True)
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cache

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from argusdb import catalog
from argusdb.checker.constructs import CONSTRUCTS, SAFE_TABLE_FUNCTIONS, Construct

#: Columns every DuckDB table has without declaring them.
PSEUDO_COLUMNS = frozenset({"rowid"})
#: A quoted table name that looks like a file, a glob or a URL.
PATHLIKE = re.compile(r"[/\\*?:]|\.[A-Za-z0-9]{1,8}(\.gz|\.zst)?$")


@dataclass
class Relation:
    """What a FROM item refers to.

    Attributes:
        name: relation name as written (lower case).
        kind: 'table', 'view', 'construct', 'function', 'derived', 'unknown' or 'path'.
        columns: its columns; None when they cannot be known (a derived ``SELECT *``).
        construct: the evidence-aware construct, for kind 'construct'.
        scope: the scope of a CTE or derived table.
    """

    name: str
    kind: str
    columns: set[str] | None = None
    construct: Construct | None = None
    scope: Scope | None = None
    args: list[exp.Expression] = field(default_factory=list)


@cache
def catalog_objects() -> dict[str, catalog.SqlObject]:
    """The catalog's tables, views and macros by lower-case name (read once per process)."""
    return {n.lower(): o for n, o in catalog.all_objects().items()}


def catalog_columns(name: str) -> set[str]:
    obj = catalog_objects().get(name)
    return set(obj.columns) if obj else set()


def relation_of(table: exp.Table) -> Relation:
    """Classify a base (non-CTE) FROM item."""
    fn = table.this
    if isinstance(fn, exp.Func):
        name = (fn.name if isinstance(fn, exp.Anonymous) else fn.sql_name()).lower()
        if isinstance(fn, exp.GenerateSeries):
            name = "range"
        args = list(fn.expressions) if isinstance(fn, exp.Anonymous) else \
            [a for a in fn.args.values() if isinstance(a, exp.Expression)]
        if name in CONSTRUCTS:
            c = CONSTRUCTS[name]
            cols = set(c.columns) if c.columns is not None else \
                catalog_columns("evidence") | set(c.extra_columns)
            return Relation(name, "construct", cols, construct=c, args=args)
        alias_cols = _alias_columns(table)
        return Relation(name, "function", alias_cols or ({name} if name in
                                                           SAFE_TABLE_FUNCTIONS else None),
                        args=args)
    name = table.name.lower()
    if table.args.get("db") or table.args.get("catalog"):
        # 'other_db.t' or 'file.csv' parsed as db.table: never a store object.
        dotted = ".".join(p.name for p in table.parts)
        kind = "path" if PATHLIKE.search(dotted) else "unknown"
        return Relation(dotted, kind)
    obj = catalog_objects().get(name)
    if obj is not None and obj.kind in ("table", "view"):
        return Relation(name, obj.kind, set(obj.columns))
    quoted = isinstance(table.this, exp.Identifier) and table.this.quoted
    if quoted and PATHLIKE.search(table.name):
        return Relation(table.name, "path")
    return Relation(name, "unknown")


def _alias_columns(table: exp.Table) -> set[str]:
    alias = table.args.get("alias")
    if isinstance(alias, exp.TableAlias):
        return {c.name.lower() for c in alias.columns}
    return set()


def suggest(name: str, candidates: set[str] | list[str]) -> str:
    """' (did you mean x?)' with the closest candidates, or ''."""
    close = difflib.get_close_matches(name.lower(), sorted(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def known_relations() -> list[str]:
    return sorted(n for n, o in catalog_objects().items()
                  if o.kind in ("table", "view") and not n.startswith("_")) + sorted(CONSTRUCTS)


def own_columns(scope: Scope) -> list[exp.Column]:
    """Columns written in ``scope`` itself (not in its subqueries)."""
    root = scope.expression
    out = []
    for col in root.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            continue
        anc = col.parent
        while anc is not None and anc is not root and not isinstance(anc, exp.Query):
            anc = anc.parent
        if anc is root:
            out.append(col)
    return out


def output_columns(scope: Scope, relations: dict[int, Relation]) -> set[str] | None:
    """Names of the columns a scope returns; None when they cannot be known."""
    node = scope.expression
    if isinstance(node, exp.SetOperation):
        left = node.left
        while isinstance(left, exp.SetOperation):
            left = left.left
        for sub in getattr(scope, "union_scopes", []):
            if sub.expression is left:
                return output_columns(sub, relations)
        return None
    if not isinstance(node, exp.Select):
        return None
    out: set[str] = set()
    for proj in node.expressions:
        if isinstance(proj, exp.Star) or (isinstance(proj, exp.Column)
                                          and isinstance(proj.this, exp.Star)):
            alias = proj.table if isinstance(proj, exp.Column) else ""
            excluded = {c.name.lower() for c in (proj.args.get("except") or [])} \
                if isinstance(proj, exp.Star) else set()
            for a, (_, src) in scope.selected_sources.items():
                if alias and a != alias:
                    continue
                cols = source_columns(src, relations)
                if cols is None:
                    return None
                out |= cols - excluded
        elif proj.alias_or_name:
            out.add(proj.alias_or_name.lower())
        else:
            return None
    return out


def source_columns(src: object, relations: dict[int, Relation]) -> set[str] | None:
    """Columns of one selected source (a Table or a Scope)."""
    if isinstance(src, Scope):
        return output_columns(src, relations)
    if isinstance(src, exp.Table):
        rel = relations.get(id(src)) or relation_of(src)
        return rel.columns
    return None
