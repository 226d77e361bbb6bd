"""Pass 3: combinations and output. Where rows of streams meet (joins, scalar subqueries,
one aggregate's group, one window's partition) a :class:`Combination` records what meets and
which key columns keep it apart; the scope's output stream carries properties and keys on.

Each is a function of the shared :class:`~argusdb.checker.resolve.Analysis`.

Example:
    >>> import sqlglot
    >>> from argusdb.checker.context import Context
    >>> an = Analysis(Context("SELECT 1", sqlglot.parse_one("SELECT 1")), None)
    >>> rows = [{"program_version": "a", "_rows": 2}, {"program_version": "b", "_rows": 1}]
    >>> sorted((k, p.rows) for k, p in groups_of(an, rows, ["program_version"]).items())
    [(('a',), 2), (('b',), 1)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from argusdb.checker.context import KEY_COLUMNS, Combination, Lineage, Props, Stream
from argusdb.checker.passes import syntax as sx
from argusdb.checker.resolve import Analysis, columns_of, ref_of
from argusdb.schema.sqltext import literal


def value_streams(an: Analysis, sc: Scope, streams: dict[str, Stream],
                   nodes: list[Any]) -> list[str]:
    out: list[str] = []
    for n in nodes:
        if not isinstance(n, exp.Expression):
            continue
        for c in n.find_all(exp.Column):
            ref = ref_of(an, sc, c)
            if ref and ref[0] in streams and ref[1] in streams[ref[0]].values \
                    and ref[0] not in out:
                out.append(ref[0])
    return out


def join_combinations(an: Analysis, sc: Scope, node: exp.Select, streams: dict[str, Stream],
                       uf: sx.UnionFind) -> None:
    names = list(streams)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sa, sb = streams[a], streams[b]
            sep = {p for p in KEY_COLUMNS
                   if any(uf.find((a, ca)) == uf.find((b, cb))
                          for ca in sa.keys.get(p, ()) for cb in sb.keys.get(p, ()))}
            where = sb.node if isinstance(sb.node, exp.Expression) else node
            an.ctx.combinations.append(Combination("join", where, (sa, sb),
                                                     sa.props.merge(sb.props), sep))
            # values of the two added, subtracted or compared: in one unit?
            hit_unit = values_add(an, sc, node, [a], [b], streams)
            if hit_unit is not None:
                an.ctx.combinations.append(Combination(
                    "join", hit_unit, (sa, sb), sa.props.merge(sb.props), sep,
                    only=frozenset({"unit"})))
            # timestamps of the two compared or subtracted: on one clock?
            for prop, aligned in (("clock", False), ("aligned_clock", True)):
                hit = timestamps_meet(an, sc, node, {a: sa, b: sb}, aligned)
                if hit is not None:
                    an.ctx.combinations.append(Combination(
                        "join", hit, (sa, sb), sa.props.merge(sb.props), sep,
                        only=frozenset({prop})))


def values_add(an: Analysis, sc: Scope, node: Any, left: list[Any], right: list[Any],
                streams: dict[str, Stream]) -> exp.Expression | None:
    """The first sum, difference, comparison, ``least``/``greatest``/``coalesce`` of
    ``node``'s own expressions with an operand reading values of ``left`` and another of
    ``right`` (stream aliases, or scalar subquery nodes): where their units must agree (a
    ratio or a product is a quantity of its own)."""
    def reads(operand: Any, side: list[Any]) -> bool:
        if any(isinstance(x, exp.Expression) for x in side):
            return any(n is x for x in side for n in operand.walk())
        return bool(set(value_streams(an, sc, streams, [operand])) & set(side))

    for n in sx.own_nodes(node):
        if isinstance(n, sx.ADDITIVE):
            ops = [n.left, n.right] if isinstance(n, exp.Binary) else \
                [n.this, *n.expressions]
            ops = [o for o in ops if isinstance(o, exp.Expression)]
            if any(reads(x, left) for x in ops) and any(reads(y, right) for y in ops) and \
                    any(reads(x, left) and not reads(x, right) for x in ops):
                return n
    return None


def timestamp_owner(an: Analysis, sc: Scope, streams: dict[str, Stream], aligned: bool
                     ) -> Callable[[exp.Column], str | None]:
    """Which of ``streams`` (base streams) a column is a raw (or aligned) timestamp of."""
    def owner(col: exp.Column) -> str | None:
        ref = ref_of(an, sc, col)
        if ref is None or ref[0] not in streams or not streams[ref[0]].base:
            return None
        st = streams[ref[0]]
        return ref[0] if ref[1] in sx.clock_columns(st.relation, aligned) else None
    return owner


def timestamps_meet(an: Analysis, sc: Scope, node: exp.Select, pair: dict[str, Stream],
                     aligned: bool) -> exp.Expression | None:
    """The first comparison, arithmetic or function of ``node``'s own expressions that
    puts timestamps of both streams of ``pair`` together as points in time."""
    owner = timestamp_owner(an, sc, pair, aligned)
    for n in sx.own_nodes(node):
        if (isinstance(n, exp.Binary) and not isinstance(n, exp.Connector)) or \
                isinstance(n, exp.Func):
            if set(pair) <= sx.timestamp_terms(n, owner):
                return n
    return None


def timestamp_aggregates(an: Analysis, sc: Scope, node: exp.Select, aggs: list[exp.Expression],
                          keys: list[Any], streams: dict[str, Stream],
                          meta_rows: dict[str, list[dict[str, Any]]],
                          uf: sx.UnionFind) -> None:
    """An aggregate that reads timestamps as points in time (``max(end_ns)``) compares
    its rows' clocks: one combination per group, about the clock only."""
    for prop, aligned in (("clock", False), ("aligned_clock", True)):
        owner = timestamp_owner(an, sc, streams, aligned)
        hit = sorted({a for agg in aggs for a in sx.timestamp_terms(agg, owner, True)})
        if hit:
            group_combinations(an, sc, node, "aggregate", keys, hit, streams, meta_rows,
                                     uf, None, frozenset({prop}))


def subquery_combinations(an: Analysis, sc: Scope, streams: dict[str, Stream],
                           uf: sx.UnionFind) -> list[Stream]:
    """A scalar subquery over evidence meets every row of the outer streams, and every
    other scalar subquery of the scope (``(SELECT ...) / (SELECT ...)``): joins, keyed
    only by correlated equalities (on one outer column, for two subqueries). ``IN`` and
    ``EXISTS`` only filter. Returns the scalar subqueries' streams, in order."""
    scalars: list[tuple[Stream, list[tuple[str, tuple[str, str]]]]] = []
    for sub in getattr(sc, "subquery_scopes", []):
        inner = an.out.get(id(sub.expression))
        if inner is None or sx.filtering(sub.expression):
            continue
        name = f"(subquery {len(scalars) + 1})"
        sub_stream = Stream(name, name, sub.expression,
                            inner.props, inner.keys, inner.values, set(inner.acks),
                            inner.diffs_versions)
        where = sub.expression.args.get("where")
        pairs = []
        for c in sx.conjuncts(where.this if where is not None else None):
            if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) \
                    and isinstance(c.right, exp.Column):
                for a, b in ((c.left, c.right), (c.right, c.left)):
                    ri, ro = ref_of(an, sub, a), ref_of(an, sc, b)
                    if ri and ro and b.table:
                        pairs.append((ri[1], ro))
        for alias, outer in streams.items():
            sep = {p for p, ks in KEY_COLUMNS.items()
                   if any(n_in in ks and a == alias and n_out in outer.keys.get(p, ())
                          for n_in, (a, n_out) in pairs)}
            an.ctx.combinations.append(Combination(
                "join", sub.expression, (outer, sub_stream), outer.props.merge(inner.props),
                sep))
        for other, other_pairs in scalars:
            # both equated to one outer column: they read rows of one run (version ...)
            sep = {p for p, ks in KEY_COLUMNS.items()
                   if any(na in ks and nb in ks and uf.find(ra) == uf.find(rb)
                          for na, ra in pairs for nb, rb in other_pairs)}
            an.ctx.combinations.append(Combination(
                "join", sub.expression, (other, sub_stream),
                other.props.merge(inner.props), sep))
            hit = values_add(an, sc, sc.expression, [other.node], [sub.expression],
                                   streams)
            if hit is not None:
                an.ctx.combinations.append(Combination(
                    "join", hit, (other, sub_stream), other.props.merge(inner.props), sep,
                    only=frozenset({"unit"})))
        scalars.append((sub_stream, pairs))
    return [st for st, _ in scalars]


def group_combinations(an: Analysis, sc: Scope, where: Any, kind: str,
                        keys: list[Any], involved: list[str],
                        streams: dict[str, Stream], meta_rows: dict[str, list[dict[str, Any]]],
                        uf: sx.UnionFind, row_filter: list[exp.Expression] | None = None,
                        only: frozenset[str] | None = None) -> None:
    for alias in involved:
        st = streams[alias]
        if st.base:
            mine = [st.key_ids.index(id(k)) for k in keys if id(k) in st.key_ids]
            rows = meta_rows[alias]
            if row_filter and all(id(f) in st.key_ids for f in row_filter):
                # FILTER (WHERE ...): only the rows some condition keeps meet
                fs = [f"_k{st.key_ids.index(id(f))}" for f in row_filter]
                rows = [r for r in rows if any(r.get(f) not in (False, None) for f in fs)]
            per_group(an, where, kind, st, rows, [f"_k{i}" for i in mine],
                            [st.keys_sql[i] for i in mine], set(), only, [])
            continue
        names = set()
        for k in keys:
            if isinstance(k, exp.Column):
                ref = ref_of(an, sc, k)
                if ref is None:
                    continue
                for (a2, n2) in list(uf.parent):
                    if a2 == alias and uf.find((a2, n2)) == uf.find(ref):
                        names.add(n2)
                if ref[0] == alias:
                    names.add(ref[1])
        sep = {p for p in KEY_COLUMNS if names & st.keys.get(p, set())} | {
            p for c in names & set(st.group_keys) for p in st.group_keys[c]}
        if not traced_groups(an, sc, where, kind, keys, alias, st, uf, sep, only):
            an.ctx.combinations.append(Combination(kind, where, (st,), st.props, sep,
                                                     only=only))


def traced_groups(an: Analysis, sc: Scope, where: Any, kind: str, keys: list[Any], alias: str,
                   st: Stream, uf: sx.UnionFind, sep: set[str],
                   only: frozenset[str] | None) -> bool:
    """A derived stream's groups checked against its base stream's rows, where the keys
    trace back to that stream's columns (:class:`Lineage`): each group holds no more than
    the base rows, under the subquery's own predicates, with the traced values. False
    (the static rule decides) where nothing traces or the static rule mixes nothing."""
    lin = st.lineage
    if lin is None or not any(st.props.mixed(x) for x in KEY_COLUMNS
                              if x not in sep and (only is None or x in only)):
        return False
    traced: list[tuple[str, str] | exp.Expression] = []
    labels: list[Callable[[], str]] = []

    def base_column(c: exp.Column) -> tuple[str, str] | None:
        ref = ref_of(an, sc, c)
        if ref is None:
            return None
        same = [n2 for (a2, n2) in list(uf.parent)
                if a2 == alias and uf.find((a2, n2)) == uf.find(ref)]
        col = ref[1] if ref[0] == alias else next(iter(same), None)
        return lin.columns.get(col) if col is not None else None

    for k in keys:
        if isinstance(k, exp.Column):
            hit = base_column(k)
            if hit is not None and hit not in traced:
                traced.append(hit)
                labels.append(k.sql)
            continue
        # an expression of traced columns (PARTITION BY upper(region_id)) groups the base
        # rows by the same expression of their columns
        cols = list(k.find_all(exp.Column)) if isinstance(k, exp.Expression) else []
        based = [base_column(c) for c in cols]
        if not cols or any(b is None for b in based) or k.find(
                exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder):
            continue
        by_id = {id(c): b for c, b in zip(cols, based, strict=True)}
        expr = k.copy()
        for c, orig in zip(list(expr.find_all(exp.Column)), cols, strict=True):
            b = by_id[id(orig)]
            assert b is not None
            c.replace(exp.column(b[1], table=b[0]))
        traced.append(expr)
        labels.append(k.sql)
    if not traced:
        return False
    found = lin.rows(traced)
    if found is None:
        return False
    per_group(an, where, kind, st, found[0], found[1], labels, sep, only, lin.aggregations)
    return True


def per_group(an: Analysis, where: Any, kind: str, st: Stream, rows: list[dict[str, Any]],
               fields: list[str], labels: list[Callable[[], str]], sep: set[str],
               only: frozenset[str] | None, aggregations: list[frozenset[str]]) -> None:
    """One combination per group of metadata ``rows`` (by the values of ``fields``,
    named ``labels``) that mixes a property ``sep`` does not keep apart."""
    groups = groups_of(an, rows, fields)
    for kept in aggregations:
        groups = {g: Props(**{**p.__dict__, "scopes": {sx.aggregated_scope(x, set(kept))
                                                       for x in p.scopes}})
                  for g, p in groups.items()}
    props = [x for x in KEY_COLUMNS if x not in sep and (only is None or x in only)]
    mixed = [(g, p) for g, p in groups.items() if any(p.mixed(x) for x in props)]
    # the first groups, and for each property the first group mixing it, so that
    # which rules refuse does not hang on the order the groups come in
    shown = mixed[:sx.MAX_GROUPS]
    for x in props:
        if not any(p.mixed(x) for _, p in shown):
            shown += [gp for gp in mixed if gp[1].mixed(x)][:1]
    for g, p in shown:
        label = ", ".join(f"{n()}={_shown(v)}" for n, v in zip(labels, g, strict=True))
        an.ctx.combinations.append(Combination(kind, where, (st,), p, sep, label,
                                                 only=only))


def groups_of(an: Analysis, rows: list[dict[str, Any]], fields: list[str]
            ) -> dict[tuple[Any, ...], Props]:
    """Properties of ``rows`` per value of ``fields``. The groups of the same rows by more
    fields (an inner aggregate's, before an outer group over its keys) are merged where
    known: fewer groups than rows. Read-only: callers copy before changing one."""
    held = an.group_cache.setdefault(id(rows), (rows, {}))[1]
    for have, finer in held.items():
        if set(fields) <= set(have):
            pos = [have.index(f) for f in fields]
            out: dict[tuple[Any, ...], Props] = {}
            for g, p in finer.items():
                k = tuple(g[i] for i in pos)
                out[k] = out[k].merge(p) if k in out else p
            return out
    out = {}
    for r in rows:
        out.setdefault(tuple(r.get(f) for f in fields), Props()).add(r)
    held[tuple(fields)] = out
    return out


def output_of(an: Analysis, sc: Scope, node: exp.Select, streams: dict[str, Stream],
              aggregated: bool, group_keys: list[exp.Expression], grouped: list[exp.Expression],
            partitions: list[list[exp.Expression]], scalars: list[Stream] | None = None
            ) -> Stream | None:
    """The stream this scope outputs. ``grouped``: the GROUP BY keys that keep every
    output row's rows apart (not the rolled-up ones); ``partitions``: every window's;
    ``scalars``: the streams of its scalar subqueries (their values are in its rows)."""
    scalars = scalars or []
    if not streams and not scalars:
        return None
    out = Stream("(derived)", "(derived)", node, Props(), {k: set() for k in KEY_COLUMNS},
                 set())
    kept: frozenset[str] | None = None
    for st in streams.values():
        props = st.props
        if aggregated and not st.scope_filtered:
            kept = frozenset(r[1] for k in group_keys if isinstance(k, exp.Column)
                             and (r := ref_of(an, sc, k)) and r[0] == st.alias)
            props = Props(**{**props.__dict__,
                             "scopes": {sx.aggregated_scope(x, set(kept))
                                        for x in props.scopes}})
        out.props = out.props.merge(props)
        out.acks |= st.acks
        out.diffs_versions |= st.diffs_versions
    for st in scalars:
        out.props = out.props.merge(st.props)
        out.acks |= st.acks
        out.diffs_versions |= st.diffs_versions
    for proj in node.expressions:
        if isinstance(proj, exp.Star) or (isinstance(proj, exp.Column)
                                          and isinstance(proj.this, exp.Star)):
            only = proj.table.lower() if isinstance(proj, exp.Column) else ""
            for st in streams.values():
                if only and st.alias != only:
                    continue
                for p, cols in st.keys.items():
                    out.keys[p] |= cols
                out.values |= st.values
                out.group_keys.update(st.group_keys)
            continue
        name = proj.alias_or_name.lower()
        inner = proj.unalias()
        if isinstance(inner, exp.Column):
            ref = ref_of(an, sc, inner)
            if ref and ref[0] in streams:
                for p, cols in streams[ref[0]].keys.items():
                    if ref[1] in cols:
                        out.keys[p].add(name)
                if ref[1] in streams[ref[0]].group_keys:
                    out.group_keys[name] = set(streams[ref[0]].group_keys[ref[1]])
        elif isinstance(inner, exp.Literal):
            # every row of this scope carries the literal: a label of its rows (UNION)
            out.labels[name] = {inner.sql(): out.props}
        if any(n is st.node for st in scalars for n in inner.walk()):
            out.values.add(name)
        if value_streams(an, sc, streams, [inner]):
            out.values.add(name)
    # the outermost scope's output meets nothing: no lineage to trace
    if sc.parent is not None and len(streams) == 1 and not any(
            an.out.get(id(sub.expression)) is not None
            for sub in getattr(sc, "subquery_scopes", [])):
        out.lineage = lineage_of(an, sc, node, *next(iter(streams.items())),
                                    grouped if aggregated else None, partitions, kept)
    return out


def lineage_of(an: Analysis, sc: Scope, node: exp.Select, alias: str, st: Stream,
             grouped: list[exp.Expression] | None, partitions: list[list[exp.Expression]],
             kept: frozenset[str] | None) -> Lineage | None:
    """Where the output columns of a scope over one stream ``st`` come from (see
    :class:`Lineage`): an output column that is a plain reference to a column of ``st``'s
    base, or a traced column of a derived ``st``, traces on when it keys every row the
    output row holds: a key of the aggregation (``grouped``; None: not aggregated) and of
    every window partition. Anything else (an expression, a rolled-up key, a column a
    window reads across) does not trace, and the static rule decides over it."""
    lin = st.lineage
    regroup = st.regroup if st.base else lin.regroup if lin is not None else None
    if regroup is None:
        return None
    needed = [{r for e in keys if isinstance(e, exp.Column) and (r := ref_of(an, sc, e))}
              for keys in ([grouped] if grouped is not None else []) + partitions]
    named: dict[str, list[tuple[str, str] | None]] = {}
    for proj in node.expressions:
        if isinstance(proj, exp.Star) or (isinstance(proj, exp.Column)
                                          and isinstance(proj.this, exp.Star)):
            only = proj.table.lower() if isinstance(proj, exp.Column) else ""
            for a, (_, src) in sc.selected_sources.items():
                if not only or a == only:
                    own = set(lin.columns) if lin is not None and a == alias else set()
                    for c in sorted((columns_of(an, src) or set()) | own):
                        named.setdefault(c, []).append((a, c))
            continue
        inner = proj.unalias()
        ref = ref_of(an, sc, inner) if isinstance(inner, exp.Column) else None
        named.setdefault(proj.alias_or_name.lower(), []).append(ref)
    columns: dict[str, tuple[str, str]] = {}
    for name, refs in named.items():
        ref = refs[0]
        if len(refs) != 1 or ref is None or not all(ref in n for n in needed):
            continue  # a name given twice, an expression, or not a key of every row
        traced = ref if st.base else lin.columns.get(ref[1]) \
            if lin is not None and ref[0] == alias else None
        if traced is not None:
            columns[name] = traced
    if not columns:
        return None
    return Lineage(regroup, columns, [*(lin.aggregations if lin is not None and not st.base
                                       else []), *([kept] if kept is not None else [])],
                   lin.narrowed if lin is not None and not st.base else ())


def _shown(value: Any) -> str:
    """A group key's value in a message as SQL writes it: ``'x'``, ``3``, ``NULL``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return literal(value)
