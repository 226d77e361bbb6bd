"""The provenance pass: scopes → evidence streams → combinations, for the rules to judge.

Walks the scopes of a statement children first (sqlglot's scope module), resolves every FROM
item and column (:mod:`argusdb.checker.resolve`), and for every evidence-bearing FROM item asks
the store which rows the query's own simple predicates on that item select
(:mod:`argusdb.checker.provenance`). A CTE or derived table becomes a stream for the scope that
reads it, carrying the properties of its rows and which of its output columns still key them
(an output ``program_version`` column keeps versions apart in an outer GROUP BY).

Example:
    >>> ctx = analyse("SELECT median(value) FROM evidence", tree, Metadata.of(store))
    >>> [c.kind for c in ctx.combinations]
    ['aggregate']
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

from argusdb.checker import resolve
from argusdb.checker.constructs import ACKNOWLEDGEABLE
from argusdb.checker.context import KEY_COLUMNS, Combination, Context, Props, Stream
from argusdb.checker.parse import position
from argusdb.checker.provenance import Metadata, evidence_relation

#: version_diff output columns that map onto metadata columns (for predicates and keys).
_DIFF_META = {"region_id", "unit", "evidence_class", "signature", "signal"}
_SCOPE_COLS = ("cta", "sm", "warp", "warp_role", "loop_iter")
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


class Analyzer:
    """One statement's analysis; :func:`analyse` is the entry point."""

    def __init__(self, sql: str, statement: exp.Expression, meta: Metadata | None) -> None:
        self.ctx = Context(sql, statement)
        self.meta = meta
        self.relations: dict[int, resolve.Relation] = {}
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

    def _relations(self, sc: Scope) -> None:
        ctes = {name.lower() for s in _chain(sc) for name, src in s.sources.items()
                if isinstance(src, Scope)}
        for _alias, (_node, src) in sc.selected_sources.items():
            if not isinstance(src, exp.Table) or id(src) in self.relations:
                continue
            rel = resolve.relation_of(src)
            self.relations[id(src)] = rel
            if rel.kind == "unknown":
                self.ctx.unknown_tables.append(
                    (src, rel.name, resolve.suggest(rel.name,
                                                    resolve.known_relations() + sorted(ctes))))
            elif rel.kind == "construct":
                self._construct(src, rel)

    def _construct(self, node: exp.Table, rel: resolve.Relation) -> None:
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
                self.ctx.bad_constructs.append(
                    (a, con.name, f"argument {a.sql(dialect='duckdb')!r} of {con.name} is not a "
                                  f"string literal (or a list of them)"))
                return
        if len(lits) != len(con.params):
            self.ctx.bad_constructs.append(
                (node, con.name, f"{con.name} takes {len(con.params)} argument(s) "
                                 f"({', '.join(con.params)}), got {len(lits)}"))
            return
        line, col = position(self.ctx.sql, node)
        self.ctx.constructs.append({"construct": con.name, "args": lits, "line": line,
                                    "col": col})
        if con.acknowledgeable:
            acks = lits[0] if isinstance(lits[0], list) else [lits[0]]
            for a in acks:
                if a not in con.acknowledgeable:
                    self.ctx.bad_constructs.append(
                        (node, con.name, f"{a!r} is not something {con.name} can acknowledge "
                                         f"(one of {', '.join(con.acknowledgeable)})"
                                         f"{resolve.suggest(a, list(con.acknowledgeable))}"))
                    return
                self.ctx.acknowledgements.append({"acknowledges": a, "rule": ACKNOWLEDGEABLE[a],
                                                  "line": line, "col": col})

    def _resolve_columns(self, sc: Scope) -> None:
        sel = sc.expression
        aliases = {p.alias.lower() for p in sel.expressions if p.alias}
        for col in resolve.own_columns(sc):
            name, tbl = col.name.lower(), col.table.lower()
            if col.args.get("db") or _lambda_param(col, name):
                continue
            if tbl:
                found = False
                for s in _chain(sc):
                    if tbl in s.selected_sources:
                        found = True
                        cols = resolve.source_columns(s.selected_sources[tbl][1], self.relations)
                        if cols is not None and name not in cols \
                                and name not in resolve.PSEUDO_COLUMNS:
                            self.ctx.unknown_columns.append(
                                (col, f"{tbl}.{name}", f"{tbl} has no column {name!r}"
                                                       f"{resolve.suggest(name, cols)}"))
                        break
                if not found and not self._has_column(sc, tbl):
                    known = {a for s in _chain(sc) for a in s.selected_sources}
                    self.ctx.unknown_columns.append(
                        (col, f"{tbl}.{name}", f"no table or alias {tbl!r} in this query"
                                               f"{resolve.suggest(tbl, known)}"))
                continue
            if name in aliases or name in resolve.PSEUDO_COLUMNS or self._has_column(sc, name):
                continue
            cands = set(aliases)
            for s in _chain(sc):
                for _, src in s.selected_sources.values():
                    cands |= resolve.source_columns(src, self.relations) or set()
            self.ctx.unknown_columns.append(
                (col, name, f"no column {name!r} in the tables of this query"
                            f"{resolve.suggest(name, cands)}"))

    def _has_column(self, sc: Scope, name: str) -> bool:
        for s in _chain(sc):
            for _, src in s.selected_sources.values():
                cols = resolve.source_columns(src, self.relations)
                if cols is None or name in cols:
                    return True
        return False

    def _ref(self, sc: Scope, col: exp.Column) -> tuple[str, str] | None:
        """(alias, column) of a column of this scope's own sources, or None."""
        name, tbl = col.name.lower(), col.table.lower()
        if tbl:
            return (tbl, name) if tbl in sc.selected_sources else None
        hits = [a for a, (_, src) in sc.selected_sources.items()
                if (resolve.source_columns(src, self.relations) or set()) >= {name}]
        if len(hits) == 1:
            return hits[0], name
        if not hits and len(sc.selected_sources) == 1:
            return next(iter(sc.selected_sources)), name
        return None

    # -- streams and combinations --------------------------------------------------------
    def _analyse(self, sc: Scope) -> Stream | None:
        node = sc.expression
        if isinstance(node, exp.SetOperation):
            parts = [p for u in getattr(sc, "union_scopes", [])
                     if (p := self.out.get(id(u.expression))) is not None]
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
        windows = [w for w in node.find_all(exp.Window) if _owner(w) is node]
        aggregated = bool(node.args.get("group")) or any(
            _owner(a) is node and not _in_window(a) for a in node.find_all(exp.AggFunc))
        key_sets = [group_keys] + [list(w.args.get("partition_by") or []) for w in windows]
        streams: dict[str, Stream] = {}
        meta_rows: dict[str, list[dict[str, Any]]] = {}
        for alias, (ref, src) in sc.selected_sources.items():
            if isinstance(src, Scope):
                st = self.out.get(id(src.expression))
                if st is not None:
                    streams[alias] = Stream(alias, alias, ref, st.props,
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
        if aggregated:
            self._group_combinations(sc, node, "aggregate", group_keys if not rollup else
                                     [k for k in group_keys if k not in rollup], 0,
                                     self._value_streams(sc, streams, [
                                         a for a in node.find_all(exp.AggFunc)
                                         if _owner(a) is node and not _in_window(a)]),
                                     streams, meta_rows, uf)
        for i, w in enumerate(windows, start=1):
            parts = list(w.args.get("partition_by") or [])
            involved = self._value_streams(sc, streams, [w.this, w.args.get("order")])
            self._group_combinations(sc, w, "window", parts, i, involved, streams, meta_rows, uf)
        return self._output(sc, node, streams, aggregated, group_keys)

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
        keys: list[exp.Expression] = []
        for g in group.expressions:
            if isinstance(g, exp.Literal) and g.is_int and 0 < int(g.this) <= len(
                    sel.expressions):
                keys.append(sel.expressions[int(g.this) - 1].unalias())
            elif isinstance(g, exp.Column) and not g.table and g.name.lower() in by_alias:
                keys.append(by_alias[g.name.lower()])
            else:
                keys.append(g)
        rolled: list[exp.Expression] = []
        for kind in ("rollup", "cube", "grouping_sets"):
            for r in group.args.get(kind) or []:
                rolled.extend(r.expressions if hasattr(r, "expressions") and r.expressions
                              else [r])
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
            diff_signal, v_from, v_to = rel_literals(rel)
            preds += [f"signal = {_lit(diff_signal)}",
                      f"program_version IN ({_lit(v_from)}, {_lit(v_to)})",
                      "region_id IS NOT NULL", "_scope = 'kernel'"]
            used |= {"signal", "program_version", "region_id", "_scope"}
        keys: list[str] = []
        for ks in key_sets:
            for k in ks:
                sql = self._rewrite(sc, k, alias, uf, mapping, used)
                if sql is not None and sql not in keys:
                    keys.append(sql)
        rows = self.meta.rows(base, preds, keys, used)
        cols = resolve.source_columns(src, self.relations) or set()
        keyed = {p: set(cols & ks) for p, ks in KEY_COLUMNS.items()}
        if con is not None and con.diffs_versions:
            keyed = {"version": {"from_version", "to_version"}, "class": {"evidence_class"},
                     "standing": {"signature"}, "pass": set(), "scope": set()}
        values = set(con.value_columns) if con is not None else \
            ({"value"} if "value" in cols else {"dur_ns"})
        st = Stream(alias, rel.name, src, Props.of_rows(rows), keyed, values,
                    base=True, predicates=preds, diffs_versions=bool(con and con.diffs_versions),
                    keys_sql=keys, scope_filtered=any(c in used for c in _SCOPE_COLS))
        if con is not None and con.acknowledgeable:
            acks = rel_literals(rel)[0]
            st.acks = set(acks if isinstance(acks, list) else [acks])
        return st, rows

    def _predicates(self, sc: Scope, alias: str, uf: _UnionFind, mapping: set[str] | None
                    ) -> tuple[list[str], set[str]]:
        """The query's simple predicates on ``alias`` (and on runs joined to it), rewritten."""
        node = sc.expression
        where = node.args.get("where")
        conds = _conjuncts(where.this if where is not None else None)
        for j in node.args.get("joins") or []:
            side = (j.args.get("side") or "").upper()
            if side in ("", "INNER") or (side == "LEFT" and j.this.alias_or_name.lower()
                                         == alias):
                conds += _conjuncts(j.args.get("on"))
        out: list[str] = []
        used: set[str] = set()
        for c in conds:
            if c.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder):
                continue
            sql = self._rewrite(sc, c, alias, uf, mapping, used)
            if sql is not None:
                out.append(sql)
        return out, used

    def _rewrite(self, sc: Scope, e: exp.Expression, alias: str, uf: _UnionFind,
                 mapping: set[str] | None, used: set[str]) -> str | None:
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
                            names.append(n2)
                            used.add(n2)
                            return exp.column(n2).sql(dialect="duckdb")
                return None
            names.append(n)
        new = e.copy()
        for c, n in zip(list(new.find_all(exp.Column)), names, strict=True):
            c.replace(exp.column(n))
        used.update(names)
        return new.sql(dialect="duckdb")

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

    def _group_combinations(self, sc: Scope, where: Any, kind: str,
                            keys: list[Any], _site: int, involved: list[str],
                            streams: dict[str, Stream], meta_rows: dict[str, list[dict[str, Any]]],
                            uf: _UnionFind) -> None:
        for alias in involved:
            st = streams[alias]
            if st.base:
                mine: list[int] = []
                all_keys = st.keys_sql
                for k in keys:
                    sql = self._rewrite(sc, k, alias, uf, _DIFF_META if st.diffs_versions
                                        else None, set())
                    if sql is not None and sql in all_keys:
                        mine.append(all_keys.index(sql))
                groups: dict[tuple[Any, ...], Props] = {}
                for r in meta_rows[alias]:
                    g = tuple(r.get(f"_k{i}") for i in mine)
                    groups.setdefault(g, Props()).add(r)
                mixed = [(g, p) for g, p in groups.items()
                         if any(p.mixed(x) for x in KEY_COLUMNS)]
                for g, p in mixed[:_MAX_GROUPS]:
                    label = ", ".join(f"{all_keys[i]}={v!r}" for i, v in zip(mine, g,
                                                                             strict=True))
                    self.ctx.combinations.append(Combination(kind, where, (st,), p, set(), label))
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
            self.ctx.combinations.append(Combination(kind, where, (st,), st.props, sep))

    def _output(self, sc: Scope, node: exp.Select, streams: dict[str, Stream], aggregated: bool,
                group_keys: list[exp.Expression]) -> Stream | None:
        if not streams:
            return None
        out = Stream("(derived)", "(derived)", node, Props(), {k: set() for k in KEY_COLUMNS},
                     set())
        for st in streams.values():
            props = st.props
            if aggregated and not st.scope_filtered and not any(
                    isinstance(k, exp.Column) and (r := self._ref(sc, k)) and r[0] == st.alias
                    and r[1] in KEY_COLUMNS["scope"] for k in group_keys):
                props = Props(**{**props.__dict__, "scopes": {"kernel"}})
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


def rel_literals(rel: resolve.Relation) -> list[Any]:
    out: list[Any] = []
    for a in rel.args:
        if isinstance(a, exp.Array):
            out.append([x.this for x in a.expressions])
        else:
            out.append(a.this)
    return out


def _lit(v: Any) -> str:
    return exp.Literal.string(str(v)).sql(dialect="duckdb")


def _chain(sc: Scope) -> list[Scope]:
    out = []
    s: Scope | None = sc
    while s is not None:
        out.append(s)
        s = s.parent
    return out


def _owner(node: Any) -> Any:
    anc = node.parent
    while anc is not None and not isinstance(anc, exp.Query):
        anc = anc.parent
    return anc


def _in_window(node: Any) -> bool:
    anc = node.parent
    while anc is not None and not isinstance(anc, exp.Query):
        if isinstance(anc, exp.Window):
            return True
        anc = anc.parent
    return False


def _lambda_param(col: exp.Column, name: str) -> bool:
    anc = col.parent
    while anc is not None:
        if isinstance(anc, exp.Lambda) and any(p.name.lower() == name
                                               for p in anc.expressions):
            return True
        anc = anc.parent
    return False


def analyse(sql: str, statement: exp.Expression, meta: Metadata | None) -> Context:
    """Resolve and analyse one statement; with ``meta`` None only names are resolved."""
    return Analyzer(sql, statement, meta).run()
