"""Syntax helpers of the analysis passes: conjuncts, GROUP BY keys, windows, FILTER clauses.

Pure functions of sqlglot trees (no catalog, no store): what a scope's WHERE and ON say, which
expressions key its groups, which calls are aggregates and what they read.

Example:
    >>> import sqlglot
    >>> where = sqlglot.parse_one("SELECT 1 WHERE a = 1 AND (b = 2)").args["where"]
    >>> [c.sql() for c in conjuncts(where.this)]
    ['a = 1', 'b = 2']
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from argusdb.checker import functions
from argusdb.checker.context import KEY_COLUMNS

#: version_diff output columns that map onto metadata columns (for predicates and keys).
DIFF_META = {"region_id", "unit", "evidence_class", "signature", "signal"}
SCOPE_COLS = ("sm", "cta", "warp", "warp_role", "loop_iter")
#: Scope levels of scope-tree paths (see provenance._filled), kept by a GROUP BY scope_path.
PATH_LEVELS = ("tool_scope", "in_kernel_scope")
#: Most per-group combinations kept per site (the rules report the first ones).
MAX_GROUPS = 20


class UnionFind:
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


def conjuncts(node: Any) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return conjuncts(node.left) + conjuncts(node.right)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


def join_conditions(sc: Scope) -> list[exp.Expression]:
    node = sc.expression
    where = node.args.get("where")
    conds = conjuncts(where.this if where is not None else None)
    for j in node.args.get("joins") or []:
        conds += conjuncts(j.args.get("on"))
        using = j.args.get("using") or []
        right = j.this.alias_or_name.lower()
        for u in using:
            for a in sc.selected_sources:
                if a != right:
                    conds.append(exp.EQ(this=exp.column(u.name, table=a),
                                        expression=exp.column(u.name, table=right)))
    return conds


def group_keys(sel: exp.Select) -> tuple[list[exp.Expression], list[exp.Expression]]:
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


def lit(v: Any) -> str:
    return exp.Literal.string(str(v)).sql(dialect="duckdb")


def aggregated_scope(level: str, kept: set[str]) -> str:
    """Scope level of an aggregate over rows of ``level`` grouped by the columns ``kept``:
    coordinates not kept are aggregated away (a kernel-wide value when none is left)."""
    parts = [c for c in SCOPE_COLS if c in level.split(",") and c in kept]
    parts += [p for p in PATH_LEVELS if p in level.split(",") and "scope_path" in kept]
    return ",".join(parts) or "kernel"


def output_names(node: Any) -> list[str]:
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


def set_op_scopes(sc: Scope) -> list[Scope]:
    # sqlglot >= 26 names them set_operation_scopes; older releases union_scopes
    return list(getattr(sc, "set_operation_scopes", None) or getattr(sc, "union_scopes", []))


def filtering(sub: exp.Expression) -> bool:
    """Whether subquery ``sub`` only filters its outer rows (``x IN (SELECT ...)``,
    ``EXISTS (SELECT ...)``) rather than giving a value that meets them."""
    parent = sub.parent
    if isinstance(parent, exp.Subquery):
        parent = parent.parent
    return isinstance(parent, exp.In | exp.Exists)


#: Operations whose operands must be in one unit (a ratio or a product is a new quantity).
ADDITIVE = (exp.Add, exp.Sub, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Greatest,
            exp.Least, exp.Coalesce)
#: Raw and aligned timestamp columns of relations with a clock (see ``clock_columns``).
_RAW_TIMES = frozenset({"start_ns", "end_ns"})
_ALIGNED_TIMES = frozenset({"aligned_start_ns", "aligned_end_ns"})
#: Relations whose start_ns / end_ns are already on the launch group's reference clock.
ALIGNED_RELATIONS = frozenset({"interval_span_join_ranks"})


def clock_columns(relation: str, aligned: bool) -> frozenset[str]:
    """Timestamp columns of ``relation`` on its rows' raw clock (``aligned`` False) or on the
    launch group's reference clock (True)."""
    if relation in ALIGNED_RELATIONS:
        return _RAW_TIMES if aligned else frozenset()
    return _ALIGNED_TIMES if aligned else _RAW_TIMES


def timestamp_terms(node: Any, owner: Any, row_durations: bool = False) -> set[str]:
    """Streams whose timestamps appear in ``node`` as points in time: ``owner(column)`` names
    the stream of a timestamp column (None: not one). A difference of one stream's
    timestamps (``end_ns - start_ns``) is a duration, on no clock; with ``row_durations`` any
    difference of timestamps is (within one joined row, whose clocks the join is judged on:
    ``least(a.end_ns, b.end_ns) - greatest(a.start_ns, b.start_ns)``). Nested queries are
    not looked into."""
    if isinstance(node, exp.Column):
        who = owner(node)
        return {who} if who is not None else set()
    if isinstance(node, exp.Query):
        return set()
    if isinstance(node, exp.Sub):
        left = timestamp_terms(node.left, owner, row_durations)
        right = timestamp_terms(node.right, owner, row_durations)
        if (left == right and len(left) == 1) or (row_durations and left and right):
            return set()
        return left | right
    out: set[str] = set()
    for child in node.iter_expressions():
        out |= timestamp_terms(child, owner, row_durations)
    return out


def own_nodes(root: exp.Expression) -> list[exp.Expression]:
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
SUMMED = frozenset({"granularity", "unit", "sampler"})
IDENTITY = frozenset(KEY_COLUMNS) - SUMMED
WRAPPERS = (exp.WithinGroup, exp.Filter, exp.IgnoreNulls, exp.RespectNulls)


def call(node: Any) -> Any:
    """The whole call of an aggregate: with its WITHIN GROUP order and FILTER clause."""
    while isinstance(node.parent, WRAPPERS):
        node = node.parent
    return node


def filter_of(call: exp.Expression) -> exp.Expression | None:
    """The condition of an aggregate's FILTER (WHERE ...) clause, if it has one."""
    node: Any = call
    while isinstance(node, WRAPPERS):
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


def is_window_call(node: exp.Expression) -> bool:
    """Whether ``node`` is the function of a window (not an aggregate inside its argument)."""
    return isinstance(call(node).parent, exp.Window) and call(node).arg_key == "this"


def evidence(node: Any) -> str:
    while isinstance(node, WRAPPERS):
        node = node.this
    return functions.evidence_of(node) if isinstance(node, exp.Func) else "row"


def partition(w: exp.Window, named: dict[str, exp.Window]) -> list[exp.Expression]:
    """PARTITION BY of a window, through a named window (``OVER w``, ``OVER (w ...)``)."""
    own = list(w.args.get("partition_by") or [])
    if own:
        return own
    base = named_base(w, named)
    return list(base.args.get("partition_by") or []) if base is not None else []


def named_base(w: exp.Window, named: dict[str, exp.Window]) -> exp.Window | None:
    ref = w.args.get("alias")
    name = str(ref.name if isinstance(ref, exp.Expression) else ref or "").lower()
    return named.get(name) if name else None
