"""Pass 3: combinations and output. Where rows of streams meet (joins, scalar subqueries,
one aggregate's group, one window's partition) a :class:`Combination` records what meets and
which key columns keep it apart; the scope's output stream carries properties and keys on.

Example:
    >>> CombinationPass.__mro__[1].__name__
    'StreamPass'
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from argusdb.checker.context import KEY_COLUMNS, Combination, Props, Stream
from argusdb.checker.passes import syntax as sx
from argusdb.checker.passes.streams import StreamPass


class CombinationPass(StreamPass):
    """Combinations of a scope's streams and the stream it outputs."""

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
                           uf: sx.UnionFind) -> None:
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
            for c in sx.conjuncts(where.this if where is not None else None):
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
                            uf: sx.UnionFind, row_filter: list[exp.Expression] | None = None,
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
                # the first groups, and for each property the first group mixing it, so that
                # which rules refuse does not hang on the order the groups come in
                shown = mixed[:sx.MAX_GROUPS]
                for x in KEY_COLUMNS:
                    if (only is None or x in only) and not any(p.mixed(x) for _, p in shown):
                        shown += [gp for gp in mixed if gp[1].mixed(x)][:1]
                for g, p in shown:
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
                                 "scopes": {sx.aggregated_scope(x, kept) for x in props.scopes}})
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
