"""The provenance analysis: scopes → evidence streams → combinations, for the rules to judge.

Walks the scopes of a statement children first (sqlglot's scope module), resolves every FROM
item and column (:mod:`argusdb.checker.resolve`), and for every evidence-bearing FROM item asks
the store which rows the query's own simple predicates on that item select
(a :class:`~argusdb.checker.metadata.Metadata`). A CTE or derived table becomes a
stream for the scope that reads it, carrying the properties of its rows and which of its
output columns still key them (an output ``program_version`` column keeps versions apart
in an outer GROUP BY). The passes live in :mod:`argusdb.checker.passes`; this module runs
them per scope.

Example:
    >>> import sqlglot
    >>> ctx = analyse("SELECT 1 AS one", sqlglot.parse_one("SELECT 1 AS one"), None)
    >>> (ctx.unknown_tables, ctx.combinations)
    ([], [])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

from argusdb.checker import functions, resolve
from argusdb.checker.context import KEY_COLUMNS, Context, Lineage, Props, Stream
from argusdb.checker.metadata import Metadata
from argusdb.checker.passes import syntax as sx
from argusdb.checker.passes.combinations import (
    group_combinations,
    join_combinations,
    output_of,
    subquery_combinations,
    timestamp_aggregates,
    value_streams,
)
from argusdb.checker.passes.streams import base_stream, listed
from argusdb.checker.resolve import Analysis, ref_of, resolve_names


def named_output(an: Analysis, sc: Scope, st: Stream | None) -> Stream | None:
    """The output stream of a CTE or derived table under its column list (``t(n)``):
    its keys, values, labels and traced columns go by the listed names, in order."""
    names = resolve.alias_columns(sc.expression)
    if st is None or not names:
        return st
    mine = sx.output_names(sc.expression)
    if len(mine) != len(names) or len(set(mine)) != len(mine):
        # positions unknown: any listed column may carry evidence, none keys it
        return Stream(st.alias, st.relation, st.node, st.props,
                      {k: set() for k in KEY_COLUMNS}, set(names), set(st.acks),
                      st.diffs_versions)
    ren = dict(zip(mine, names, strict=True))
    lin = st.lineage
    return Stream(st.alias, st.relation, st.node, st.props,
                  {k: {ren[c] for c in v if c in ren} for k, v in st.keys.items()},
                  {ren[c] for c in st.values if c in ren}, set(st.acks), st.diffs_versions,
                  lineage=None if lin is None else Lineage(
                      lin.regroup, {ren[c]: v for c, v in lin.columns.items() if c in ren},
                      lin.aggregations, lin.narrowed),
                  labels={ren[c]: v for c, v in st.labels.items() if c in ren},
                  group_keys={ren[c]: v for c, v in st.group_keys.items() if c in ren})


def narrowed_by(an: Analysis, sc: Scope, alias: str, st: Stream) -> tuple[Props, Lineage] | None:
    """A derived stream under this scope's WHERE conjuncts on its traced columns (an
    outer ``WHERE run_id = '...'`` on a CTE): its rows are those of its base stream with
    the traced values, so the base rows under the rewritten predicates are all it holds.
    None when no conjunct traces."""
    lin = st.lineage
    where = sc.expression.args.get("where")
    if lin is None or where is None:
        return None
    extra: list[exp.Expression] = []
    for c in sx.conjuncts(where.this):
        c = listed(an, sc, c) or c
        if c.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder):
            continue
        refs = [ref_of(an, sc, col) for col in c.find_all(exp.Column)]
        if not refs or any(r is None or r[0] != alias or r[1] not in lin.columns
                           for r in refs):
            continue

        def traced(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column):
                ref = ref_of(an, sc, n)
                assert ref is not None
                a, name = lin.columns[ref[1]]
                return exp.column(name, table=a)
            return n
        extra.append(c.transform(traced))
    if not extra:
        return None
    narrowed = Lineage(lin.regroup, lin.columns, lin.aggregations,
                       (*lin.narrowed, *extra))
    found = narrowed.rows([])
    if found is None:
        return None
    props = Props.of_rows(found[0])
    for kept in lin.aggregations:
        props.scopes = {sx.aggregated_scope(x, set(kept)) for x in props.scopes}
    return props, narrowed


def analyse_scope(an: Analysis, sc: Scope) -> Stream | None:
    node = sc.expression
    if isinstance(node, exp.SetOperation):
        names0 = sx.output_names(node)
        parts: list[Stream] = []
        for u in sx.set_op_scopes(sc):
            p = an.out.get(id(u.expression))
            if p is None:
                continue
            # columns of a set operation are positional: the left side names them
            mine = sx.output_names(u.expression)
            if names0 and mine and len(mine) == len(names0):
                ren = dict(zip(mine, names0, strict=True))
                p = Stream(p.alias, p.relation, p.node, p.props,
                           {k: {ren.get(c, c) for c in v} for k, v in p.keys.items()},
                           {ren.get(c, c) for c in p.values}, set(p.acks),
                           p.diffs_versions,
                           labels={ren.get(c, c): v for c, v in p.labels.items()},
                           group_keys={ren.get(c, c): v for c, v in p.group_keys.items()})
            elif names0 and mine != names0:
                p = Stream(p.alias, p.relation, p.node, p.props, p.keys, p.values,
                           set(p.acks), p.diffs_versions)
            parts.append(p)
        if not parts:
            return None
        out = Stream("(union)", "(union)", node, Props(), {}, set())
        for p in parts:
            out.props = out.props.merge(p.props)
            out.values |= p.values
            out.acks |= p.acks
            out.diffs_versions |= p.diffs_versions
        out.keys = {k: set.intersection(*(p.keys.get(k, set()) for p in parts))
                    for k in KEY_COLUMNS}
        # a column every branch fills with literals ('s2' AS v) tells the branches apart
        for col in set.intersection(*(set(p.labels) for p in parts)):
            merged: dict[Any, Props] = {}
            for p in parts:
                for v, props in p.labels[col].items():
                    merged[v] = merged[v].merge(props) if v in merged else props
            out.labels[col] = merged
            kept = {k for k in KEY_COLUMNS if not any(x.mixed(k) for x in merged.values())}
            if kept:
                out.group_keys[col] = kept
        return out
    if not isinstance(node, exp.Select):
        return None
    uf = sx.UnionFind()
    for cond in sx.join_conditions(sc):
        if isinstance(cond, exp.EQ) and isinstance(cond.left, exp.Column) \
                and isinstance(cond.right, exp.Column):
            a, b = ref_of(an, sc, cond.left), ref_of(an, sc, cond.right)
            if a and b:
                uf.union(a, b)
    group_keys, rollup = sx.group_keys(node)
    # In a correlated subquery, a column equated to an outer column is constant per
    # evaluation: it keys the aggregate like a GROUP BY column would.
    group_keys += correlated_keys(an, sc)
    # one walk of this scope's own nodes (not its subqueries) for windows and aggregates
    windows: list[exp.Window] = []
    aggs: list[exp.Expression] = []
    named = {str(w.this.name).lower(): w for w in node.args.get("windows") or []
             if isinstance(w, exp.Window)}
    for n in sx.own_nodes(node):
        if isinstance(n, exp.Window):
            if n.arg_key != "windows":
                windows.append(n)
        elif functions.kind_of(n) in ("aggregate", "window") and not sx.is_window_call(n):
            aggs.append(sx.call(n))
    aggregated = bool(node.args.get("group")) or bool(aggs)
    value_aggs = [a for a in aggs if sx.evidence(a) != "count"]
    partitions = {id(w): sx.partition(w, named) for w in windows}
    filters = [f for a in aggs if (f := sx.filter_of(a)) is not None]
    key_sets = [group_keys] + [partitions[id(w)] for w in windows] + [filters]
    streams: dict[str, Stream] = {}
    meta_rows: dict[str, list[dict[str, Any]]] = {}
    for alias, (ref, src) in sc.selected_sources.items():
        if isinstance(src, Scope):
            st = an.out.get(id(src.expression))
            if st is not None:
                name = alias or "(subquery)"
                props, lineage = narrowed_by(an, sc, alias, st) or (st.props, st.lineage)
                streams[alias] = Stream(name, name, ref, props,
                                        {k: set(v) for k, v in st.keys.items()},
                                        set(st.values), set(st.acks), st.diffs_versions,
                                        lineage=lineage,
                                        group_keys={c: set(v) for c, v in
                                                    st.group_keys.items()})
            continue
        rel = an.relations.get(id(src))
        if rel is None:
            continue
        made = base_stream(an, sc, alias, src, rel, uf, key_sets)
        if made is not None:
            streams[alias], meta_rows[alias] = made
    an.ctx.streams.extend(streams.values())
    join_combinations(an, sc, node, streams, uf)
    scalars = subquery_combinations(an, sc, streams, uf)
    if aggregated:
        agg_keys = [k for k in group_keys if not any(k is r for r in rollup)]
        timestamp_aggregates(an, sc, node, value_aggs, agg_keys, streams, meta_rows, uf)
        plain = [va for va in value_aggs if sx.filter_of(va) is None]
        conds = [c for va in value_aggs if (c := sx.filter_of(va)) is not None]
        # one output row puts every aggregate of its group together: identity properties
        # over the rows any aggregate reads ...
        group_combinations(an, sc, node, "aggregate", agg_keys,
                                 value_streams(an, sc, streams, value_aggs),
                                 streams, meta_rows, uf, None if plain else conds,
                                 None if not conds else sx.IDENTITY)
        # ... granularity and unit per aggregate (what one sum adds up)
        if conds:
            group_combinations(an, sc, node, "aggregate", agg_keys,
                                     value_streams(an, sc, streams, plain),
                                     streams, meta_rows, uf, None, sx.SUMMED)
        for va in value_aggs:
            if (fcond := sx.filter_of(va)) is not None:
                group_combinations(an, sc, node, "aggregate", agg_keys,
                                         value_streams(an, sc, streams, [va]),
                                         streams, meta_rows, uf, [fcond], sx.SUMMED)
    by_alias = {p.alias.lower(): p.unalias() for p in node.expressions if p.alias}
    for w in windows:
        wparts = partitions[id(w)]
        base = sx.named_base(w, named)
        order = w.args.get("order") or (base.args.get("order") if base is not None
                                        else None)
        reads = [w.this, order]
        if sx.evidence(w.this) in ("count",) or (sx.evidence(w.this) == "rank"
                                               and order is None):
            reads = []
        direct = list(reads)
        # a window over an aggregate's alias reads the aggregate's evidence
        reads += [by_alias[c.name.lower()] for r in list(reads) if isinstance(
            r, exp.Expression) for c in r.find_all(exp.Column)
                  if not c.table and c.name.lower() in by_alias]
        involved = value_streams(an, sc, streams, reads)
        # over filtered aggregates only: the rows their (one) condition keeps
        expanded: list[exp.Expression] = [x for x in reads[len(direct):]
                                          if isinstance(x, exp.Expression)]
        inner = [fa for rd in expanded for fa in rd.find_all(exp.Filter)]
        wconds: dict[str, exp.Expression] = {}
        for fa in inner:
            if (fc := sx.filter_of(fa)) is not None:
                wconds[fc.sql()] = fc
        unfiltered = [x for rd in expanded for x in rd.find_all(exp.Func)
                      if functions.kind_of(x) == "aggregate"
                      and not isinstance(sx.call(x), exp.Filter)]
        wcond = next(iter(wconds.values())) if len(wconds) == 1 and not unfiltered and \
            not value_streams(an, sc, streams, direct) else None
        group_combinations(an, sc, w, "window", wparts, involved, streams, meta_rows, uf,
                                 [wcond] if wcond is not None else None)
    grouped = [k for k in group_keys if not any(k is r for r in rollup)]
    return output_of(an, sc, node, streams, aggregated, group_keys, grouped,
                        list(partitions.values()), scalars)


def correlated_keys(an: Analysis, sc: Scope) -> list[exp.Expression]:
    if sc.parent is None:
        return []
    where = sc.expression.args.get("where")
    out: list[exp.Expression] = []
    for c in sx.conjuncts(where.this if where is not None else None):
        if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) \
                and isinstance(c.right, exp.Column):
            for a, b in ((c.left, c.right), (c.right, c.left)):
                if ref_of(an, sc, a) and b.table and b.table.lower() not in \
                        sc.selected_sources:
                    out.append(a)
    return out


def trace_provenance(an: Analysis, scopes: list[Scope]) -> None:
    """Passes 2 and 3, scope by scope (children first, so that a CTE's stream is there for the
    scope that reads it): base streams, then the combinations they meet in and the stream
    the scope outputs. Not run when a name is unknown or there is no Metadata."""
    c = an.ctx
    if c.unknown_tables or c.unknown_columns or c.ambiguous_columns or c.bad_constructs \
            or an.meta is None:
        return
    for sc in scopes:
        an.out[id(sc.expression)] = named_output(an, sc, analyse_scope(an, sc))


#: The passes in the order they run, each a function of the shared :class:`Analysis` and the
#: statement's scopes (as sqlglot's optimizer lists its rules).
PASSES: tuple[Callable[[Analysis, list[Scope]], None], ...] = (resolve_names, trace_provenance)


class Analyzer:
    """One statement's analysis: :data:`PASSES` over its scopes; :func:`analyse` is the entry
    point."""

    def __init__(self, sql: str, statement: exp.Expression, meta: Metadata | None) -> None:
        self.an = Analysis(Context(sql, statement), meta)

    def run(self) -> Context:
        root = build_scope(self.an.ctx.statement)
        if root is not None:
            scopes = list(root.traverse())
            for run_pass in PASSES:
                run_pass(self.an, scopes)
        return self.an.ctx


def analyse(sql: str, statement: exp.Expression, meta: Metadata | None) -> Context:
    """Resolve and analyse one statement; with ``meta`` None only names are resolved."""
    return Analyzer(sql, statement, meta).run()
