"""The provenance pass: scopes → evidence streams → combinations, for the rules to judge.

Walks the scopes of a statement children first (sqlglot's scope module), resolves every FROM
item and column (:mod:`argusdb.checker.resolve`), and for every evidence-bearing FROM item asks
the store which rows the query's own simple predicates on that item select
(a :class:`~argusdb.checker.metadata.Metadata`). A CTE or derived table becomes a
stream for the scope that reads it, carrying the properties of its rows and which of its
output columns still key them (an output ``program_version`` column keeps versions apart
in an outer GROUP BY).

Example:
    >>> ctx = analyse("SELECT median(value) FROM evidence", tree, Metadata.of(store))
    >>> [c.kind for c in ctx.combinations]
    ['aggregate']
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

from argusdb.checker import constructs, functions, resolve
from argusdb.checker.context import KEY_COLUMNS, Combination, Context, Props, Stream
from argusdb.checker.metadata import Metadata, evidence_columns, evidence_relation
from argusdb.checker.predicates import Pred

#: version_diff output columns that map onto metadata columns (for predicates and keys).
_DIFF_META = {"region_id", "unit", "evidence_class", "signature", "signal"}
_SCOPE_COLS = ("sm", "cta", "warp", "warp_role", "loop_iter")
#: Scope levels of scope-tree paths (see provenance._filled), kept by a GROUP BY scope_path.
_PATH_LEVELS = ("tool_scope", "in_kernel_scope")
#: Most per-group combinations kept per site (the rules report the first ones).
_MAX_GROUPS = 20


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(self, x: tuple[str, str]) -> tuple[str, str]:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: tuple[str, str], b: tuple[str, str]) -> None:
        self.parent[self.find(a)] = self.find(b)


def _conjuncts(node: Any) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


class Analyzer(resolve.Resolver):
    """One statement's analysis; :func:`analyse` is the entry point."""

    def __init__(self, sql: str, statement: exp.Expression, meta: Metadata | None) -> None:
        super().__init__(Context(sql, statement))
        self.meta = meta
        self.out: dict[int, Stream | None] = {}

    # -- resolution ----------------------------------------------------------------------
    def run(self) -> Context:
        root = build_scope(self.ctx.statement)
        if root is None:
            return self.ctx
        scopes = list(root.traverse())
        for sc in scopes:
            self._relations(sc)
        for sc in scopes:
            if isinstance(sc.expression, exp.Select):
                self._resolve_columns(sc)
        c = self.ctx
        if c.unknown_tables or c.unknown_columns or c.bad_constructs or self.meta is None:
            return c
        for sc in scopes:
            self.out[id(sc.expression)] = self._analyse(sc)
        return c

    # -- streams and combinations --------------------------------------------------------
    def _analyse(self, sc: Scope) -> Stream | None:
        node = sc.expression
        if isinstance(node, exp.SetOperation):
            names0 = _output_names(node)
            parts = []
            for u in _set_op_scopes(sc):
                p = self.out.get(id(u.expression))
                if p is None:
                    continue
                # columns of a set operation are positional: the left side names them
                mine = _output_names(u.expression)
                if names0 and mine and len(mine) == len(names0):
                    ren = dict(zip(mine, names0, strict=True))
                    p = Stream(p.alias, p.relation, p.node, p.props,
                               {k: {ren.get(c, c) for c in v} for k, v in p.keys.items()},
                               {ren.get(c, c) for c in p.values}, set(p.acks),
                               p.diffs_versions)
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
            return out
        if not isinstance(node, exp.Select):
            return None
        uf = _UnionFind()
        for cond in self._join_conditions(sc):
            if isinstance(cond, exp.EQ) and isinstance(cond.left, exp.Column) \
                    and isinstance(cond.right, exp.Column):
                a, b = self._ref(sc, cond.left), self._ref(sc, cond.right)
                if a and b:
                    uf.union(a, b)
        group_keys, rollup = self._group_keys(node)
        # In a correlated subquery, a column equated to an outer column is constant per
        # evaluation: it keys the aggregate like a GROUP BY column would.
        group_keys += self._correlated(sc)
        # one walk of this scope's own nodes (not its subqueries) for windows and aggregates
        windows: list[exp.Window] = []
        aggs: list[exp.Expression] = []
        named = {str(w.this.name).lower(): w for w in node.args.get("windows") or []
                 if isinstance(w, exp.Window)}
        for n in _own_nodes(node):
            if isinstance(n, exp.Window):
                if n.arg_key != "windows":
                    windows.append(n)
            elif functions.kind_of(n) in ("aggregate", "window") and not _is_window_call(n):
                aggs.append(_call(n))
        aggregated = bool(node.args.get("group")) or bool(aggs)
        value_aggs = [a for a in aggs if _evidence(a) != "count"]
        partitions = {id(w): _partition(w, named) for w in windows}
        filters = [f for a in aggs if (f := _filter_of(a)) is not None]
        key_sets = [group_keys] + [partitions[id(w)] for w in windows] + [filters]
        streams: dict[str, Stream] = {}
        meta_rows: dict[str, list[dict[str, Any]]] = {}
        for alias, (ref, src) in sc.selected_sources.items():
            if isinstance(src, Scope):
                st = self.out.get(id(src.expression))
                if st is not None:
                    name = alias or "(subquery)"
                    streams[alias] = Stream(name, name, ref, st.props,
                                            {k: set(v) for k, v in st.keys.items()},
                                            set(st.values), set(st.acks), st.diffs_versions)
                continue
            rel = self.relations.get(id(src))
            if rel is None:
                continue
            made = self._base_stream(sc, alias, src, rel, uf, key_sets)
            if made is not None:
                streams[alias], meta_rows[alias] = made
        self.ctx.streams.extend(streams.values())
        self._join_combinations(sc, node, streams, uf)
        self._subquery_combinations(sc, streams)
        if aggregated:
            agg_keys = group_keys if not rollup else [k for k in group_keys
                                                      if not any(k is r for r in rollup)]
            plain = [va for va in value_aggs if _filter_of(va) is None]
            conds = [c for va in value_aggs if (c := _filter_of(va)) is not None]
            # one output row puts every aggregate of its group together: identity properties
            # over the rows any aggregate reads ...
            self._group_combinations(sc, node, "aggregate", agg_keys,
                                     self._value_streams(sc, streams, value_aggs),
                                     streams, meta_rows, uf, None if plain else conds,
                                     None if not conds else _IDENTITY)
            # ... granularity and unit per aggregate (what one sum adds up)
            if conds:
                self._group_combinations(sc, node, "aggregate", agg_keys,
                                         self._value_streams(sc, streams, plain),
                                         streams, meta_rows, uf, None, _SUMMED)
            for va in value_aggs:
                if (fcond := _filter_of(va)) is not None:
                    self._group_combinations(sc, node, "aggregate", agg_keys,
                                             self._value_streams(sc, streams, [va]),
                                             streams, meta_rows, uf, [fcond], _SUMMED)
        by_alias = {p.alias.lower(): p.unalias() for p in node.expressions if p.alias}
        for w in windows:
            wparts = partitions[id(w)]
            base = _named_base(w, named)
            order = w.args.get("order") or (base.args.get("order") if base is not None
                                            else None)
            reads = [w.this, order]
            if _evidence(w.this) in ("count",) or (_evidence(w.this) == "rank"
                                                   and order is None):
                reads = []
            direct = list(reads)
            # a window over an aggregate's alias reads the aggregate's evidence
            reads += [by_alias[c.name.lower()] for r in list(reads) if isinstance(
                r, exp.Expression) for c in r.find_all(exp.Column)
                      if not c.table and c.name.lower() in by_alias]
            involved = self._value_streams(sc, streams, reads)
            # over filtered aggregates only: the rows their (one) condition keeps
            expanded: list[exp.Expression] = [x for x in reads[len(direct):]
                                              if isinstance(x, exp.Expression)]
            inner = [fa for rd in expanded for fa in rd.find_all(exp.Filter)]
            wconds: dict[str, exp.Expression] = {}
            for fa in inner:
                if (fc := _filter_of(fa)) is not None:
                    wconds[fc.sql()] = fc
            unfiltered = [x for rd in expanded for x in rd.find_all(exp.Func)
                          if functions.kind_of(x) == "aggregate"
                          and not isinstance(_call(x), exp.Filter)]
            wcond = next(iter(wconds.values())) if len(wconds) == 1 and not unfiltered and \
                not self._value_streams(sc, streams, direct) else None
            self._group_combinations(sc, w, "window", wparts, involved, streams, meta_rows, uf,
                                     [wcond] if wcond is not None else None)
        return self._output(sc, node, streams, aggregated, group_keys)

    def _correlated(self, sc: Scope) -> list[exp.Expression]:
        if sc.parent is None:
            return []
        where = sc.expression.args.get("where")
        out: list[exp.Expression] = []
        for c in _conjuncts(where.this if where is not None else None):
            if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) \
                    and isinstance(c.right, exp.Column):
                for a, b in ((c.left, c.right), (c.right, c.left)):
                    if self._ref(sc, a) and b.table and b.table.lower() not in \
                            sc.selected_sources:
                        out.append(a)
        return out

    def _join_conditions(self, sc: Scope) -> list[exp.Expression]:
        node = sc.expression
        where = node.args.get("where")
        conds = _conjuncts(where.this if where is not None else None)
        for j in node.args.get("joins") or []:
            conds += _conjuncts(j.args.get("on"))
            using = j.args.get("using") or []
            right = j.this.alias_or_name.lower()
            for u in using:
                for a in sc.selected_sources:
                    if a != right:
                        conds.append(exp.EQ(this=exp.column(u.name, table=a),
                                            expression=exp.column(u.name, table=right)))
        return conds

    def _group_keys(self, sel: exp.Select) -> tuple[list[exp.Expression], list[exp.Expression]]:
        group = sel.args.get("group")
        if not group:
            return [], []
        by_alias = {p.alias.lower(): p.unalias() for p in sel.expressions if p.alias}
        if group.args.get("all"):
            return [p.unalias() for p in sel.expressions if not p.find(exp.AggFunc)], []
        def key(g: exp.Expression) -> exp.Expression:
            if isinstance(g, exp.Literal) and g.is_int and 0 < int(g.this) <= len(
                    sel.expressions):
                return sel.expressions[int(g.this) - 1].unalias()
            if isinstance(g, exp.Column) and not g.table and g.name.lower() in by_alias:
                return by_alias[g.name.lower()]
            return g

        keys: list[exp.Expression] = []
        rolled: list[exp.Expression] = []
        sets: list[exp.Expression] = [g for g in group.expressions
                                      if isinstance(g, exp.Rollup | exp.Cube | exp.GroupingSets)]
        for kind in ("rollup", "cube", "grouping_sets"):
            sets += list(group.args.get(kind) or [])
        for g in group.expressions:
            if not isinstance(g, exp.Rollup | exp.Cube | exp.GroupingSets):
                keys.append(key(g))
        # ROLLUP and CUBE have a grand-total set, GROUPING SETS keep what every set has: only
        # keys present in every grouping set keep rows apart
        for r in sets:
            items = [key(x) for x in (r.expressions if hasattr(r, "expressions") else [r])]
            flat = [c for x in items for c in (x.expressions if isinstance(
                x, exp.Tuple | exp.Paren) and hasattr(x, "expressions") and x.expressions
                else [x.this] if isinstance(x, exp.Paren) else [x])]
            if isinstance(r, exp.GroupingSets):
                per_set = [{y.sql() for y in (x.expressions if isinstance(x, exp.Tuple)
                                              else [x.this if isinstance(x, exp.Paren) else x])}
                           for x in items]
                common = set.intersection(*per_set) if per_set else set()
                kept = {k.sql() for k in keys}
                for c in flat:
                    if c.sql() in common:
                        if c.sql() not in kept:
                            keys.append(c)
                            kept.add(c.sql())
                    else:
                        rolled.append(c)
            else:
                rolled.extend(flat)
        return keys + rolled, rolled

    def _base_stream(self, sc: Scope, alias: str, src: exp.Table, rel: resolve.Relation,
                     uf: _UnionFind, key_sets: list[list[exp.Expression]]
                     ) -> tuple[Stream, list[dict[str, Any]]] | None:
        con = rel.construct
        if con is not None:
            base = "evidence"
        elif rel.kind in ("table", "view") and evidence_relation(rel.name):
            base = rel.name
        else:
            return None
        assert self.meta is not None
        mapping = _DIFF_META if con is not None and con.diffs_versions else None
        preds, used = self._predicates(sc, alias, uf, mapping)
        if con is not None and con.diffs_versions:
            self._resolve_selectors(src, rel)
            diff_signal, v_from, v_to = resolve.rel_literals(rel)
            for text, names in (
                    (f"signal = {_lit(diff_signal)}", ["signal"]),
                    (f"program_version IN ({_lit(v_from)}, {_lit(v_to)})", ["program_version"]),
                    ("region_id IS NOT NULL", ["region_id"]), ("_scope = 'kernel'", ["_scope"])):
                preds.append(Pred(sqlglot.parse_one(text, read="duckdb"), names))
            used |= {"signal", "program_version", "region_id", "_scope"}
        filtered = any(c in used for c in (*_SCOPE_COLS, "scope_path"))
        keys: list[Pred] = []
        key_ids: list[int] = []
        for ks in key_sets:
            for k in ks:
                if id(k) in key_ids:
                    continue
                pk = self._rewrite(sc, k, alias, uf, mapping, used)
                if pk is not None:
                    keys.append(pk)
                    key_ids.append(id(k))
        rows = self.meta.rows(base, preds, keys, used)
        if con is not None and con.diffs_versions:
            self._check_diff_versions(src, rel, rows)
        cols = self._cols(src) or set()
        keyed = {p: set(cols & ks) for p, ks in KEY_COLUMNS.items()}
        if con is not None and con.diffs_versions:
            keyed = {"version": {"from_version", "to_version"}, "class": {"evidence_class"},
                     "standing": {"signature"}, "pass": set(), "scope": set()}
        values = set(con.value_columns) if con is not None else set(evidence_columns(rel.name))
        st = Stream(alias, rel.name, src, Props.of_rows(rows), keyed, values,
                    base=True, predicates=preds, diffs_versions=bool(con and con.diffs_versions),
                    keys_sql=[k.sql for k in keys], key_ids=key_ids,
                    scope_filtered=filtered)
        if con is not None and con.acknowledgeable:
            acks = resolve.rel_literals(rel)[0]
            st.acks = set(acks if isinstance(acks, list) else [acks])
        return st, rows

    def _resolve_selectors(self, src: exp.Table, rel: resolve.Relation) -> None:
        """version_diff's versions in the forms ``argus diff`` accepts (an ID, a unique
        prefix of one, ``KEY=VALUE`` of its options): resolved to the ID, in the tree that
        runs; a selector that names none or several is refused with the candidates."""
        assert self.meta is not None
        versions = self.meta.program_versions()
        for i in (1, 2):
            lit = rel.args[i]
            if not isinstance(lit, exp.Literal):
                continue
            hit, why = constructs.resolve_version(str(lit.this), versions)
            if hit is None:
                self.ctx.bad_constructs.append((src, "version_diff", f"version_diff: {why}"))
            elif hit != lit.this:
                new = exp.Literal.string(hit)
                lit.replace(new)
                rel.args[i] = new

    def _check_diff_versions(self, src: exp.Table, rel: resolve.Relation,
                             rows: list[dict[str, Any]]) -> None:
        """A version_diff side without evidence is a typo or a wrong signal: say which."""
        assert self.meta is not None
        signal, *versions = resolve.rel_literals(rel)
        have = {r["program_version"] for r in rows}
        known = self.meta.versions("evidence")
        for v in versions:
            if v in have or v not in known:  # unknown selectors: _resolve_selectors said so
                continue
            why = (f"has no whole-kernel {signal!r} evidence with a region" if v in known
                   else f"is not a program version in the store{resolve.suggest(v, known)}")
            self.ctx.bad_constructs.append((src, "version_diff", f"version_diff: {v!r} {why}"))

    def _predicates(self, sc: Scope, alias: str, uf: _UnionFind, mapping: set[str] | None
                    ) -> tuple[list[Pred], set[str]]:
        """The query's simple predicates on ``alias`` (and on runs joined to it), rewritten."""
        node = sc.expression
        where = node.args.get("where")
        conds = _conjuncts(where.this if where is not None else None)
        for j in node.args.get("joins") or []:
            side = (j.args.get("side") or "").upper()
            if side in ("", "INNER") or (side == "LEFT" and j.this.alias_or_name.lower()
                                         == alias):
                conds += _conjuncts(j.args.get("on"))
        out: list[Pred] = []
        used: set[str] = set()
        for c in conds:
            if isinstance(c, exp.In) and c.args.get("query") is not None:
                p = self._semi_join(sc, c, alias, uf, mapping, used)
                if p is not None:
                    out.append(p)
                continue
            if c.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder):
                continue
            p = self._rewrite(sc, c, alias, uf, mapping, used)
            if p is None:
                p = self._propagated(sc, c, alias, uf, mapping, used)
            if p is not None:
                out.append(p)
        return out, used

    def _semi_join(self, sc: Scope, c: exp.In, alias: str, uf: _UnionFind,
                   mapping: set[str] | None, used: set[str]) -> Pred | None:
        """``e.run_id IN (SELECT run_id FROM run WHERE timing_clean)``: the values the
        (uncorrelated) subquery returns become a literal IN list over our column."""
        col = c.this
        if not isinstance(col, exp.Column) or self.meta is None:
            return None
        target = self._rewrite(sc, col, alias, uf, mapping, set())
        if target is None:
            return None
        query = c.args["query"]
        sub = query.this if isinstance(query, exp.Subquery) else query
        values = self.meta.values(sub.sql(dialect="duckdb"))
        if values is None:
            return None
        lits: list[exp.Expression] = [
            exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)
            for v in values if v is not None]
        node = exp.In(this=exp.column(target.names[0]), expressions=lits or [exp.Null()])
        used.add(target.names[0])
        return Pred(node, [target.names[0]])

    def _propagated(self, sc: Scope, c: exp.Expression, alias: str, uf: _UnionFind,
                    mapping: set[str] | None, used: set[str]) -> Pred | None:
        """``b.col = 'x'`` for ``a.col = 'x'`` when the query also says ``a.col = b.col``."""
        if not isinstance(c, exp.EQ | exp.In):
            return None
        col, rest = c.this, [c.expression] if isinstance(c, exp.EQ) else c.expressions
        if not isinstance(col, exp.Column) or not rest or not all(
                isinstance(x, exp.Literal) for x in rest):
            return None
        ref = self._ref(sc, col)
        if ref is None or ref[0] == alias:
            return None
        for a2, n2 in list(uf.parent):
            if a2 == alias and uf.find((a2, n2)) == uf.find(ref) and (
                    mapping is None or n2 in mapping):
                new = c.copy()
                new.set("this", exp.column(n2))
                used.add(n2)
                return Pred(new, [n2])
        return None

    def _rewrite(self, sc: Scope, e: exp.Expression, alias: str, uf: _UnionFind,
                 mapping: set[str] | None, used: set[str]) -> Pred | None:
        """``e`` over metadata columns if it only reads ``alias`` (or runs joined to it)."""
        cols = list(e.find_all(exp.Column))
        if not cols or any(isinstance(c.this, exp.Star) for c in cols):
            return None
        names: list[str] = []
        for c in cols:
            ref = self._ref(sc, c)
            if ref is None:
                return None
            a, n = ref
            if a == alias:
                if mapping is not None and n not in mapping:
                    return None
            elif not self._is_run_of(sc, a, alias, uf) or n not in resolve.catalog_columns(
                    "run"):
                # a key of another stream equated to one of ours still keys our rows
                if isinstance(e, exp.Column):
                    for (a2, n2), _root in list(uf.parent.items()):
                        if a2 == alias and uf.find((a2, n2)) == uf.find(ref):
                            used.add(n2)
                            return Pred(e, [n2])
                return None
            names.append(n)
        used.update(names)
        return Pred(e, names)

    def _is_run_of(self, sc: Scope, a: str, alias: str, uf: _UnionFind) -> bool:
        src = sc.selected_sources.get(a, (None, None))[1]
        rel = self.relations.get(id(src)) if isinstance(src, exp.Table) else None
        return rel is not None and rel.name == "run" and uf.find((a, "run_id")) == uf.find(
            (alias, "run_id"))

    def _value_streams(self, sc: Scope, streams: dict[str, Stream],
                       nodes: list[Any]) -> list[str]:
        out: list[str] = []
        for n in nodes:
            if not isinstance(n, exp.Expression):
                continue
            for c in n.find_all(exp.Column):
                ref = self._ref(sc, c)
                if ref and ref[0] in streams and ref[1] in streams[ref[0]].values \
                        and ref[0] not in out:
                    out.append(ref[0])
        return out

    def _join_combinations(self, sc: Scope, node: exp.Select, streams: dict[str, Stream],
                           uf: _UnionFind) -> None:
        names = list(streams)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                sa, sb = streams[a], streams[b]
                sep = {p for p in KEY_COLUMNS
                       if any(uf.find((a, ca)) == uf.find((b, cb))
                              for ca in sa.keys.get(p, ()) for cb in sb.keys.get(p, ()))}
                where = sb.node if isinstance(sb.node, exp.Expression) else node
                self.ctx.combinations.append(Combination("join", where, (sa, sb),
                                                         sa.props.merge(sb.props), sep))

    def _subquery_combinations(self, sc: Scope, streams: dict[str, Stream]) -> None:
        """A scalar subquery over evidence meets every row of the outer streams: a join,
        keyed only by its correlated equalities (``IN``/``EXISTS`` only filter)."""
        for sub in getattr(sc, "subquery_scopes", []):
            inner = self.out.get(id(sub.expression))
            if inner is None or isinstance(sub.expression.parent, exp.In | exp.Exists) \
                    or isinstance(sub.expression.parent and sub.expression.parent.parent,
                                  exp.Exists):
                continue
            sub_stream = Stream("(subquery)", "(subquery)", sub.expression, inner.props,
                                inner.keys, inner.values, set(inner.acks), inner.diffs_versions)
            where = sub.expression.args.get("where")
            pairs = []
            for c in _conjuncts(where.this if where is not None else None):
                if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) \
                        and isinstance(c.right, exp.Column):
                    for a, b in ((c.left, c.right), (c.right, c.left)):
                        ri, ro = self._ref(sub, a), self._ref(sc, b)
                        if ri and ro and ro[0] in streams and b.table:
                            pairs.append((ri[1], ro))
            for alias, outer in streams.items():
                sep = {p for p, ks in KEY_COLUMNS.items()
                       if any(n_in in ks and a == alias and n_out in outer.keys.get(p, ())
                              for n_in, (a, n_out) in pairs)}
                self.ctx.combinations.append(Combination(
                    "join", sub.expression, (outer, sub_stream), outer.props.merge(inner.props),
                    sep))

    def _group_combinations(self, sc: Scope, where: Any, kind: str,
                            keys: list[Any], involved: list[str],
                            streams: dict[str, Stream], meta_rows: dict[str, list[dict[str, Any]]],
                            uf: _UnionFind, row_filter: list[exp.Expression] | None = None,
                            only: frozenset[str] | None = None) -> None:
        for alias in involved:
            st = streams[alias]
            if st.base:
                mine = [st.key_ids.index(id(k)) for k in keys if id(k) in st.key_ids]
                groups: dict[tuple[Any, ...], Props] = {}
                rows = meta_rows[alias]
                if row_filter and all(id(f) in st.key_ids for f in row_filter):
                    # FILTER (WHERE ...): only the rows some condition keeps meet
                    fs = [f"_k{st.key_ids.index(id(f))}" for f in row_filter]
                    rows = [r for r in rows if any(r.get(f) not in (False, None) for f in fs)]
                for r in rows:
                    g = tuple(r.get(f"_k{i}") for i in mine)
                    groups.setdefault(g, Props()).add(r)
                mixed = [(g, p) for g, p in groups.items()
                         if any(p.mixed(x) for x in KEY_COLUMNS if only is None or x in only)]
                for g, p in mixed[:_MAX_GROUPS]:
                    label = ", ".join(f"{st.keys_sql[i]()}={v!r}"
                                      for i, v in zip(mine, g, strict=True))
                    self.ctx.combinations.append(Combination(kind, where, (st,), p, set(), label,
                                                             only=only))
                continue
            names = set()
            for k in keys:
                if isinstance(k, exp.Column):
                    ref = self._ref(sc, k)
                    if ref is None:
                        continue
                    for (a2, n2) in list(uf.parent):
                        if a2 == alias and uf.find((a2, n2)) == uf.find(ref):
                            names.add(n2)
                    if ref[0] == alias:
                        names.add(ref[1])
            sep = {p for p in KEY_COLUMNS if names & st.keys.get(p, set())}
            self.ctx.combinations.append(Combination(kind, where, (st,), st.props, sep,
                                                     only=only))

    def _output(self, sc: Scope, node: exp.Select, streams: dict[str, Stream], aggregated: bool,
                group_keys: list[exp.Expression]) -> Stream | None:
        if not streams:
            return None
        out = Stream("(derived)", "(derived)", node, Props(), {k: set() for k in KEY_COLUMNS},
                     set())
        for st in streams.values():
            props = st.props
            if aggregated and not st.scope_filtered:
                kept = {r[1] for k in group_keys if isinstance(k, exp.Column)
                        and (r := self._ref(sc, k)) and r[0] == st.alias}
                props = Props(**{**props.__dict__,
                                 "scopes": {_aggregated_scope(x, kept) for x in props.scopes}})
            out.props = out.props.merge(props)
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
                continue
            name = proj.alias_or_name.lower()
            inner = proj.unalias()
            if isinstance(inner, exp.Column):
                ref = self._ref(sc, inner)
                if ref and ref[0] in streams:
                    for p, cols in streams[ref[0]].keys.items():
                        if ref[1] in cols:
                            out.keys[p].add(name)
            if self._value_streams(sc, streams, [inner]):
                out.values.add(name)
        return out


def _lit(v: Any) -> str:
    return exp.Literal.string(str(v)).sql(dialect="duckdb")


def _aggregated_scope(level: str, kept: set[str]) -> str:
    """Scope level of an aggregate over rows of ``level`` grouped by the columns ``kept``:
    coordinates not kept are aggregated away (a kernel-wide value when none is left)."""
    parts = [c for c in _SCOPE_COLS if c in level.split(",") and c in kept]
    parts += [p for p in _PATH_LEVELS if p in level.split(",") and "scope_path" in kept]
    return ",".join(parts) or "kernel"


def _output_names(node: Any) -> list[str]:
    """Output column names of a SELECT (the leftmost one of a set operation); [] if unknown."""
    while isinstance(node, exp.SetOperation):
        node = node.left
    if isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Select) or any(isinstance(p, exp.Star) or (
            isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
            for p in node.expressions):
        return []
    return [p.alias_or_name.lower() for p in node.expressions]


def _set_op_scopes(sc: Scope) -> list[Scope]:
    # sqlglot >= 26 names them set_operation_scopes; older releases union_scopes
    return list(getattr(sc, "set_operation_scopes", None) or getattr(sc, "union_scopes", []))


def _own_nodes(root: exp.Expression) -> list[exp.Expression]:
    """Nodes of ``root`` outside its nested queries (depth-first, pruned at each Query)."""
    out: list[exp.Expression] = []
    stack = list(root.iter_expressions())
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Query):
            continue
        out.append(n)
        stack.extend(n.iter_expressions())
    return out


#: Properties of what one aggregate adds up, and of who the values are (one output row).
_SUMMED = frozenset({"granularity", "unit"})
_IDENTITY = frozenset(KEY_COLUMNS) - _SUMMED
_WRAPPERS = (exp.WithinGroup, exp.Filter, exp.IgnoreNulls, exp.RespectNulls)


def _call(node: Any) -> Any:
    """The whole call of an aggregate: with its WITHIN GROUP order and FILTER clause."""
    while isinstance(node.parent, _WRAPPERS):
        node = node.parent
    return node


def _filter_of(call: exp.Expression) -> exp.Expression | None:
    """The condition of an aggregate's FILTER (WHERE ...) clause, if it has one."""
    node: Any = call
    while isinstance(node, _WRAPPERS):
        if isinstance(node, exp.Filter):
            cond = node.expression
            return cond.this if isinstance(cond, exp.Where) else cond
        node = node.this
    # agg(CASE WHEN cond THEN x END) reads x only where cond holds: a FILTER by another name
    arg = node.this if isinstance(node, exp.Func) else None
    if isinstance(arg, exp.Case) and len(arg.args.get("ifs") or []) == 1 and (
            arg.args.get("default") is None or isinstance(arg.args.get("default"), exp.Null)):
        return arg.args["ifs"][0].this
    if isinstance(arg, exp.If) and (arg.args.get("false") is None
                                    or isinstance(arg.args.get("false"), exp.Null)):
        return arg.this
    return None


def _is_window_call(node: exp.Expression) -> bool:
    """Whether ``node`` is the function of a window (not an aggregate inside its argument)."""
    return isinstance(_call(node).parent, exp.Window) and _call(node).arg_key == "this"


def _evidence(node: Any) -> str:
    while isinstance(node, _WRAPPERS):
        node = node.this
    return functions.evidence_of(node) if isinstance(node, exp.Func) else "row"


def _partition(w: exp.Window, named: dict[str, exp.Window]) -> list[exp.Expression]:
    """PARTITION BY of a window, through a named window (``OVER w``, ``OVER (w ...)``)."""
    own = list(w.args.get("partition_by") or [])
    if own:
        return own
    base = _named_base(w, named)
    return list(base.args.get("partition_by") or []) if base is not None else []


def _named_base(w: exp.Window, named: dict[str, exp.Window]) -> exp.Window | None:
    ref = w.args.get("alias")
    name = str(ref.name if isinstance(ref, exp.Expression) else ref or "").lower()
    return named.get(name) if name else None


def analyse(sql: str, statement: exp.Expression, meta: Metadata | None) -> Context:
    """Resolve and analyse one statement; with ``meta`` None only names are resolved."""
    return Analyzer(sql, statement, meta).run()
