"""Pass 2: base streams. Each evidence-bearing FROM item becomes a stream with the metadata
of the rows the query's own simple predicates select on it (predicates rewritten over metadata
columns, propagated through equi-joins and uncorrelated ``IN (SELECT ...)`` semi-joins).

Example:
    >>> _constant_predicate("run_id = 'r1'")[1]
    ['run_id']
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from argusdb.checker import constructs, resolve
from argusdb.checker.context import KEY_COLUMNS, Combination, Props, Stream
from argusdb.checker.metadata import evidence_columns, evidence_relation
from argusdb.checker.passes import syntax as sx
from argusdb.checker.predicates import Pred
from argusdb.checker.resolve import Analysis, columns_of, ref_of


@lru_cache(maxsize=512)
def _constant_predicate(text: str) -> tuple[Any, list[str]]:
    """A predicate the checker writes itself (a construct's input selector, a diff's
    versions), parsed once per text with the columns it reads: a Pred never mutates its node,
    so one parsed tree serves every check."""
    node = sqlglot.parse_one(text, read="duckdb")
    return node, [c.name for c in node.find_all(exp.Column)]


def base_stream(an: Analysis, sc: Scope, alias: str, src: exp.Table, rel: resolve.Relation,
                 uf: sx.UnionFind, key_sets: list[list[exp.Expression]]
                 ) -> tuple[Stream, list[dict[str, Any]]] | None:
    con = rel.construct
    if con is not None:
        base = con.base
    elif rel.kind in ("table", "view") and evidence_relation(rel.name):
        base = rel.name
    else:
        return None
    assert an.meta is not None
    mapping = sx.DIFF_META if con is not None and con.diffs_versions else \
        set(con.passthrough) if con is not None and con.passthrough else None
    preds, used = predicates_of(an, sc, alias, uf, mapping)
    if con is not None and con.diffs_versions:
        resolve_selectors(an, src, rel)
        diff_signal, v_from, v_to = resolve.rel_literals(rel)
        for text, names in (
                (f"signal = {sx.lit(diff_signal)}", ["signal"]),
                (f"program_version IN ({sx.lit(v_from)}, {sx.lit(v_to)})", ["program_version"]),
                ("region_id IS NOT NULL", ["region_id"]), ("_scope = 'kernel'", ["_scope"])):
            preds.append(Pred(_constant_predicate(text)[0], names))
        used |= {"signal", "program_version", "region_id", "_scope"}
    filtered = any(c in used for c in (*sx.SCOPE_COLS, "scope_path"))
    pred_used = set(used)
    keys: list[Pred] = []
    key_ids: list[int] = []
    #: the metadata field of each key that is a plain column, by the column it names
    key_fields: dict[tuple[str, str], str] = {}
    for ks in key_sets:
        for k in ks:
            if id(k) in key_ids:
                continue
            pk = rewrite(an, sc, k, alias, uf, mapping, used)
            if pk is not None:
                if isinstance(k, exp.Column) and (ref := ref_of(an, sc, k)) is not None:
                    key_fields.setdefault(ref, f"_k{len(keys)}")
                keys.append(pk)
                key_ids.append(id(k))
    inputs = con.input_predicates(resolve.rel_literals(rel)) if con is not None else []
    meta = an.meta

    def fetch(keys: list[Pred], cols: set[str], more: list[Pred] | None = None
              ) -> list[list[dict[str, Any]]]:
        """Metadata rows per input (one part for a plain relation)."""
        where = [*preds, *(more or [])]
        if not inputs:
            return [meta.rows(base, where, keys, cols)]
        # each selector is one input: the rows of the base its kind or role selects
        return [meta.rows(base, [*where, Pred(node, names)], keys, cols | set(names))
                for node, names in map(_constant_predicate, inputs)]

    per_input = fetch(keys, used)
    rows = [r for part in per_input for r in part]

    def regroup(columns: list[tuple[str, str] | exp.Expression],
                extra: tuple[exp.Expression, ...] = ()
                ) -> tuple[list[dict[str, Any]], list[str]] | None:
        if not extra and all(isinstance(c, tuple) and c in key_fields for c in columns):
            # keys of this scope already (GROUP BY, PARTITION BY): its rows have them
            return rows, [key_fields[c] for c in columns if isinstance(c, tuple)]
        kused = set(pred_used)
        ks = [rewrite(an, sc, c if isinstance(c, exp.Expression) else
                            exp.column(c[1], table=c[0]), alias, uf, mapping, kused)
              for c in columns]
        # an outer scope's predicates on traced columns narrow these rows (Lineage)
        more = [rewrite(an, sc, e, alias, uf, mapping, kused) for e in extra]
        if any(k is None for k in ks) or any(m is None for m in more):
            return None
        return ([r for part in fetch([k for k in ks if k is not None], kused,
                                     [m for m in more if m is not None])
                 for r in part], [f"_k{i}" for i in range(len(ks))])
    if con is not None and con.diffs_versions:
        check_diff_versions(an, src, rel, rows)
    cols = columns_of(an, src) or set()
    keyed = {p: set(cols & ks) for p, ks in KEY_COLUMNS.items()}
    if con is not None:
        for p in con.separates:
            keyed[p] |= cols & set(con.joined_on)
    if con is not None and con.diffs_versions:
        keyed = {"version": {"from_version", "to_version"}, "class": {"evidence_class"},
                 "standing": {"signature"}, "pass": set(), "scope": set()}
    values = set(con.value_columns) if con is not None else set(evidence_columns(rel.name))
    st = Stream(alias or rel.name, rel.name, src, Props.of_rows(rows), keyed, values,
                base=True, predicates=preds, diffs_versions=bool(con and con.diffs_versions),
                keys_sql=[k.sql for k in keys], key_ids=key_ids,
                scope_filtered=filtered, regroup=regroup)
    if con is not None and con.acknowledgeable:
        acks = resolve.rel_literals(rel)[0]
        st.acks = set(acks if isinstance(acks, list) else [acks])
    if inputs and len(per_input) == 2:
        input_combination(an, src, alias, rel, per_input)
    return st, rows


def input_combination(an: Analysis, src: exp.Table, alias: str, rel: resolve.Relation,
                       per_input: list[list[dict[str, Any]]]) -> None:
    """A macro that combines two inputs (span join, intersect, exposed part) is a join of
    them, keyed by the columns it joins on (``run_id``: one run's intervals only)."""
    con = rel.construct
    assert con is not None
    sides = []
    for arg, rows in zip(dict.fromkeys(resolve.rel_literals(rel)), per_input,
                         strict=True):
        name = f"{alias} input {arg!r}"
        sides.append(Stream(name, con.base, src, Props.of_rows(rows),
                            {p: set(con.joined_on) & ks for p, ks in KEY_COLUMNS.items()},
                            set(con.value_columns)))
    sep = {p for p, ks in KEY_COLUMNS.items() if set(con.joined_on) & ks} | set(
        con.separates)
    an.ctx.combinations.append(Combination("join", src, (sides[0], sides[1]),
                                             sides[0].props.merge(sides[1].props), sep))


def resolve_selectors(an: Analysis, src: exp.Table, rel: resolve.Relation) -> None:
    """version_diff's versions in the forms ``argus diff`` accepts (an ID, a unique
    prefix of one, ``KEY=VALUE`` of its options): resolved to the ID, in the tree that
    runs; a selector that names none or several is refused with the candidates."""
    assert an.meta is not None
    versions = an.meta.program_versions()
    for i in (1, 2):
        lit = rel.args[i]
        if not isinstance(lit, exp.Literal):
            continue
        hit, why = constructs.resolve_version(str(lit.this), versions)
        if hit is None:
            an.ctx.bad_constructs.append((src, "version_diff", f"version_diff: {why}"))
        elif hit != lit.this:
            new = exp.Literal.string(hit)
            lit.replace(new)
            rel.args[i] = new


def check_diff_versions(an: Analysis, src: exp.Table, rel: resolve.Relation,
                         rows: list[dict[str, Any]]) -> None:
    """A version_diff side without evidence is a typo or a wrong signal: say which."""
    assert an.meta is not None
    signal, *versions = resolve.rel_literals(rel)
    have = {r["program_version"] for r in rows}
    known = an.meta.versions("evidence")
    for v in versions:
        if v in have or v not in known:  # unknown selectors: _resolve_selectors said so
            continue
        why = (f"has no whole-kernel {signal!r} evidence with a region" if v in known
               else f"is not a program version in the store{resolve.suggest(v, known)}")
        an.ctx.bad_constructs.append((src, "version_diff", f"version_diff: {v!r} {why}"))


def predicates_of(an: Analysis, sc: Scope, alias: str, uf: sx.UnionFind, mapping: set[str] | None
                ) -> tuple[list[Pred], set[str]]:
    """The query's simple predicates on ``alias`` (and on runs joined to it), rewritten."""
    node = sc.expression
    where = node.args.get("where")
    conds = sx.conjuncts(where.this if where is not None else None)
    for j in node.args.get("joins") or []:
        side = (j.args.get("side") or "").upper()
        if side in ("", "INNER") or (side == "LEFT" and j.this.alias_or_name.lower()
                                     == alias):
            conds += sx.conjuncts(j.args.get("on"))
    out: list[Pred] = []
    used: set[str] = set()
    for c in conds:
        if isinstance(c, exp.In) and c.args.get("query") is not None:
            p = semi_join(an, sc, c, alias, uf, mapping, used)
            if p is not None:
                out.append(p)
            continue
        if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column | exp.Subquery) \
                and isinstance(c.right, exp.Column | exp.Subquery) \
                and isinstance(c.left, exp.Subquery) != isinstance(c.right, exp.Subquery):
            # col = (SELECT ...): the value the scalar subquery gives, as col IN (...)
            col, sub = (c.left, c.right) if isinstance(c.right, exp.Subquery) else \
                (c.right, c.left)
            p = semi_join(an, sc, exp.In(this=col, query=sub), alias, uf, mapping, used)
            if p is not None:
                out.append(p)
            continue
        if c.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder):
            continue
        p = rewrite(an, sc, c, alias, uf, mapping, used)
        if p is None:
            p = propagated(an, sc, c, alias, uf, mapping, used)
        if p is not None:
            out.append(p)
    return out, used


def semi_join(an: Analysis, sc: Scope, c: exp.In, alias: str, uf: sx.UnionFind,
               mapping: set[str] | None, used: set[str]) -> Pred | None:
    """``e.run_id IN (SELECT run_id FROM run WHERE timing_clean)``: the values the
    (uncorrelated) subquery returns become a literal IN list over our column."""
    col = c.this
    if not isinstance(col, exp.Column) or an.meta is None:
        return None
    target = rewrite(an, sc, col, alias, uf, mapping, set())
    if target is None:
        return None
    lits = _returned(an, sc, c.args["query"])
    if lits is None:
        return None
    node = exp.In(this=exp.column(target.names[0]), expressions=lits)
    used.add(target.names[0])
    return Pred(node, [target.names[0]])


def listed(an: Analysis, sc: Scope, c: exp.Expression) -> exp.Expression | None:
    """``col IN (SELECT ...)`` or ``col = (SELECT ...)`` (uncorrelated) as ``col IN
    (<the values it returns>)``; None for any other conjunct or unknown values."""
    if isinstance(c, exp.In) and c.args.get("query") is not None:
        col, query = c.this, c.args["query"]
    elif isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) \
            and isinstance(c.right, exp.Subquery):
        col, query = c.left, c.right
    elif isinstance(c, exp.EQ) and isinstance(c.right, exp.Column) \
            and isinstance(c.left, exp.Subquery):
        col, query = c.right, c.left
    else:
        return None
    lits = _returned(an, sc, query) if isinstance(col, exp.Column) else None
    return None if lits is None else exp.In(this=col.copy(), expressions=lits)


def _returned(an: Analysis, sc: Scope, query: exp.Expression) -> list[exp.Expression] | None:
    """The values an uncorrelated subquery returns, as literals of an IN list (``NULL``, which
    matches nothing, where it returns none); None where they cannot be known."""
    sub = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(sub, exp.Query) or an.meta is None or correlated_to(an, sc, sub):
        return None
    values = an.meta.values(sub.sql(dialect="duckdb"))
    if values is None:
        return None
    lits: list[exp.Expression] = [
        exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)
        for v in values if v is not None]
    return lits or [exp.Null()]


def correlated_to(an: Analysis, sc: Scope, sub: Any) -> bool:
    """Whether subquery ``sub`` refers to a source of ``sc`` (or an enclosing scope)
    by a qualified column its own FROM items do not name."""
    own = {t.alias_or_name.lower() for t in sub.find_all(exp.Table)} | {
        c.alias_or_name.lower() for c in sub.find_all(exp.CTE)}
    outer = {a for s in resolve.chain(sc) for a in s.selected_sources}
    return any(c.table and c.table.lower() not in own and c.table.lower() in outer
               for c in sub.find_all(exp.Column))


def propagated(an: Analysis, sc: Scope, c: exp.Expression, alias: str, uf: sx.UnionFind,
                mapping: set[str] | None, used: set[str]) -> Pred | None:
    """``b.col = 'x'`` for ``a.col = 'x'`` when the query also says ``a.col = b.col``."""
    if not isinstance(c, exp.EQ | exp.In):
        return None
    col, rest = c.this, [c.expression] if isinstance(c, exp.EQ) else c.expressions
    if not isinstance(col, exp.Column) or not rest or not all(
            isinstance(x, exp.Literal) for x in rest):
        return None
    ref = ref_of(an, sc, col)
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


def rewrite(an: Analysis, sc: Scope, e: exp.Expression, alias: str, uf: sx.UnionFind,
             mapping: set[str] | None, used: set[str]) -> Pred | None:
    """``e`` over metadata columns if it only reads ``alias`` (or runs joined to it)."""
    cols = list(e.find_all(exp.Column))
    if not cols or any(isinstance(c.this, exp.Star) for c in cols):
        return None
    names: list[str] = []
    for c in cols:
        ref = ref_of(an, sc, c)
        if ref is None:
            return None
        a, n = ref
        if a == alias:
            if mapping is not None and n not in mapping:
                return None
        elif not is_run_of(an, sc, a, alias, uf) or n not in resolve.catalog_columns(
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


def is_run_of(an: Analysis, sc: Scope, a: str, alias: str, uf: sx.UnionFind) -> bool:
    src = sc.selected_sources.get(a, (None, None))[1]
    rel = an.relations.get(id(src)) if isinstance(src, exp.Table) else None
    return rel is not None and rel.name == "run" and uf.find((a, "run_id")) == uf.find(
        (alias, "run_id"))
