"""The resolver: relations and columns of every scope against the catalog.

Names are resolved the way DuckDB resolves them: a FROM item is a CTE, a table or view of the
catalog (``argusdb/schema/`` and ``argusdb/queries/``), an evidence-aware construct, or an allowed
table function; a column belongs to exactly one source of its scope (or of an enclosing scope, for a
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from argusdb.checker.constructs import (
    ACKNOWLEDGEABLE,
    CONSTRUCTS,
    Construct,
)
from argusdb.checker.context import Context, Props, Stream
from argusdb.checker.functions import INFORMATION_SCHEMA, SAFE_TABLES
from argusdb.checker.metadata import Metadata
from argusdb.checker.parse import position
from argusdb.schema import catalog

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
                                                           SAFE_TABLES else None),
                        args=args)
    name = table.name.lower()
    if str(table.args.get("db") or "").lower() == "information_schema" and \
            not table.args.get("catalog") and name in INFORMATION_SCHEMA:
        return Relation(f"information_schema.{name}", "view")  # documentation, no evidence
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


def alias_columns(node: Any) -> list[str]:
    """The column list a CTE or derived table gives its query (``t(n)`` in ``WITH t(n) AS
    (...)``, ``(SELECT ...) AS t(a, b)``): the names its output columns go by, in order."""
    parent = node.parent
    alias = parent.args.get("alias") if isinstance(parent, exp.CTE | exp.Subquery) else None
    if isinstance(alias, exp.TableAlias):
        return [c.name.lower() for c in alias.columns]
    return []


def output_columns(scope: Scope, relations: dict[int, Relation]) -> set[str] | None:
    """Names of the columns a scope returns; None when they cannot be known."""
    node = scope.expression
    named = alias_columns(node)
    if named:
        return set(named)
    if isinstance(node, exp.SetOperation):
        left = node.left
        while isinstance(left, exp.SetOperation):
            left = left.left
        for sub in (getattr(scope, "set_operation_scopes", None)
                    or getattr(scope, "union_scopes", [])):
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


@dataclass
class Analysis:
    """What the analysis passes share about one statement: the :class:`Context` the rules
    read, and what the passes leave for each other (every pass is a function of this).

    Example:
        >>> import sqlglot
        >>> an = Analysis(Context("SELECT 1", sqlglot.parse_one("SELECT 1")), None)
        >>> (an.relations, an.out)
        ({}, {})
    """

    ctx: Context
    meta: Metadata | None
    #: The relation each FROM item resolves to, by ``id`` of its node (:func:`relations_of`).
    relations: dict[int, Relation] = field(default_factory=dict)
    #: The stream each analysed scope outputs, by ``id`` of its expression.
    out: dict[int, Stream | None] = field(default_factory=dict)
    #: Output columns of a source, by ``id`` of the source (:func:`columns_of`).
    colcache: dict[int, set[str] | None] = field(default_factory=dict)
    #: Groups of metadata rows by fields (see ``groups_of``), by ``id`` of the rows, which the
    #: entry holds so that the id stays theirs.
    group_cache: dict[int, tuple[list[dict[str, Any]],
                                 dict[tuple[str, ...], dict[tuple[Any, ...], Props]]]] = field(
        default_factory=dict)


def resolve_names(an: Analysis, scopes: list[Scope]) -> None:
    """Pass 1: every scope's FROM items, then every SELECT's columns, to catalog names."""
    for sc in scopes:
        relations_of(an, sc)
    for sc in scopes:
        if isinstance(sc.expression, exp.Select):
            resolve_columns(an, sc)


def relations_of(an: Analysis, sc: Scope) -> None:
    ctes = {name.lower() for s in chain(sc) for name, src in s.sources.items()
            if isinstance(src, Scope)}
    for _alias, (_node, src) in sc.selected_sources.items():
        if not isinstance(src, exp.Table) or id(src) in an.relations:
            continue
        rel = relation_of(src)
        an.relations[id(src)] = rel
        if rel.kind == "unknown":
            an.ctx.unknown_tables.append(
                (src, rel.name, suggest(rel.name,
                                                known_relations() + sorted(ctes))))
        elif rel.kind == "construct":
            record_construct(an, src, rel)


def record_construct(an: Analysis, node: exp.Table, rel: Relation) -> None:
    con = rel.construct
    assert con is not None
    args = rel.args
    lits: list[Any] = []
    for a in args:
        if isinstance(a, exp.Literal) and a.is_string:
            lits.append(a.this)
        elif isinstance(a, exp.Array) and all(isinstance(x, exp.Literal) and x.is_string
                                              for x in a.expressions):
            lits.append([x.this for x in a.expressions])
        else:
            an.ctx.bad_constructs.append(
                (a, con.name, f"argument {a.sql(dialect='duckdb')!r} of {con.name} is not a "
                              f"string literal (or a list of them)"))
            return
    if len(lits) != len(con.params):
        an.ctx.bad_constructs.append(
            (node, con.name, f"{con.name} takes {len(con.params)} argument(s) "
                             f"({', '.join(con.params)}), got {len(lits)}"))
        return
    if con.selectors and record_unknown(an, node, con.name, lits, con.selectors,
                                       f"an interval selector of {con.name} (a kind or "
                                       f"role of interval_event: "):
        return
    line, col = position(an.ctx.sql, node)
    an.ctx.constructs.append({"construct": con.name, "args": lits, "line": line,
                                "col": col})
    if con.acknowledgeable:
        acks = lits[0] if isinstance(lits[0], list) else [lits[0]]
        if record_unknown(an, node, con.name, acks, con.acknowledgeable,
                         f"something {con.name} can acknowledge (one of "):
            return
        an.ctx.acknowledgements.extend({"acknowledges": a, "rule": ACKNOWLEDGEABLE[a],
                                          "line": line, "col": col} for a in acks)


def record_unknown(an: Analysis, node: exp.Expression, name: str, values: list[Any],
             allowed: Sequence[str], what: str) -> bool:
    """Record the first of ``values`` not in ``allowed`` as a bad construct ("X is not
    {what}a, b)" with a did-you-mean); True if there was one."""
    for a in values:
        if a not in allowed:
            an.ctx.bad_constructs.append(
                (node, name, f"{a!r} is not {what}{', '.join(allowed)})"
                             f"{suggest(str(a), list(allowed))}"))
            return True
    return False


def resolve_columns(an: Analysis, sc: Scope) -> None:
    sel = sc.expression
    aliases = {p.alias.lower() for p in sel.expressions if p.alias}
    for col in own_columns(sc):
        name, tbl = col.name.lower(), col.table.lower()
        if col.args.get("db") or _lambda_param(col, name):
            continue
        if tbl:
            found = False
            for s in chain(sc):
                if tbl in s.selected_sources:
                    found = True
                    cols = columns_of(an, s.selected_sources[tbl][1])
                    if cols is not None and name not in cols \
                            and name not in PSEUDO_COLUMNS:
                        an.ctx.unknown_columns.append(
                            (col, f"{tbl}.{name}", f"{tbl} has no column {name!r}"
                                                   f"{suggest(name, cols)}"))
                    break
            if not found and not has_column(an, sc, tbl):
                known = {a for s in chain(sc) for a in s.selected_sources}
                an.ctx.unknown_columns.append(
                    (col, f"{tbl}.{name}", f"no table or alias {tbl!r} in this query"
                                           f"{suggest(tbl, known)}"))
            continue
        if name in aliases or name in PSEUDO_COLUMNS:
            continue
        if has_column(an, sc, name):
            both = ambiguous(an, sc, name)
            if both:
                an.ctx.ambiguous_columns.append((col, name, both))
            continue
        cands = set(aliases)
        for s in chain(sc):
            for _, src in s.selected_sources.values():
                cands |= columns_of(an, src) or set()
        an.ctx.unknown_columns.append(
            (col, name, f"no column {name!r} in the tables of this query"
                        f"{suggest(name, cands)}"))


def ambiguous(an: Analysis, sc: Scope, name: str) -> list[str]:
    """The sources of the innermost scope that has column ``name``, when more than one
    has it and no USING or NATURAL join merges them (DuckDB's "ambiguous reference");
    [] otherwise, and when a source's columns cannot be known."""
    for s in chain(sc):
        hits = []
        for a, (_, src) in s.selected_sources.items():
            cols = columns_of(an, src)
            if cols is None:
                return []
            if name in cols:
                hits.append(a)
        if not hits:
            continue
        joins = s.expression.args.get("joins") or [] if isinstance(
            s.expression, exp.Select) else []
        merged = any(str(j.args.get("method") or "").upper() == "NATURAL"
                     or any(u.name.lower() == name for u in j.args.get("using") or [])
                     for j in joins)
        return hits if len(hits) > 1 and not merged else []
    return []


def columns_of(an: Analysis, src: object) -> set[str] | None:
    """Columns of a selected source, computed once per analysis."""
    key = id(src)
    if key not in an.colcache:
        an.colcache[key] = source_columns(src, an.relations)
    return an.colcache[key]


def has_column(an: Analysis, sc: Scope, name: str) -> bool:
    for s in chain(sc):
        for _, src in s.selected_sources.values():
            cols = columns_of(an, src)
            if cols is None or name in cols:
                return True
    return False


def ref_of(an: Analysis, sc: Scope, col: exp.Column) -> tuple[str, str] | None:
    """(alias, column) of a column of this scope's own sources, or None."""
    name, tbl = col.name.lower(), col.table.lower()
    if tbl:
        return (tbl, name) if tbl in sc.selected_sources else None
    hits = [a for a, (_, src) in sc.selected_sources.items()
            if (columns_of(an, src) or set()) >= {name}]
    if len(hits) == 1:
        return hits[0], name
    if not hits and len(sc.selected_sources) == 1:
        return next(iter(sc.selected_sources)), name
    return None


def rel_literals(rel: Relation) -> list[Any]:
    out: list[Any] = []
    for a in rel.args:
        if isinstance(a, exp.Array):
            out.append([x.this for x in a.expressions])
        else:
            out.append(a.this)
    return out


def chain(sc: Scope) -> list[Scope]:
    out = []
    s: Scope | None = sc
    while s is not None:
        out.append(s)
        s = s.parent
    return out


def _lambda_param(col: exp.Column, name: str) -> bool:
    anc = col.parent
    while anc is not None:
        if isinstance(anc, exp.Lambda) and any(p.name.lower() == name
                                               for p in anc.expressions):
            return True
        anc = anc.parent
    return False


