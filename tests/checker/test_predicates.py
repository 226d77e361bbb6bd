"""The Python fast path of metadata predicates agrees with DuckDB on the same rows."""

from __future__ import annotations

import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argusdb.api.metadata import StoreMetadata
from argusdb.checker.metadata import META_COLUMNS
from argusdb.checker.predicates import NotSimple, Pred, evaluate
from argusdb.store.embedded import Store

COLS = ["signal", "unit", "region_id", "evidence_class", "replay_pass", "timing_clean",
        "warp_role", "kernel"]
LITS = ["'duration'", "'ns'", "'softmax/softmax_fwd'", "'observed'", "'derived'", "1", "2",
        "'producer'", "'soft%'", "'%_fwd'", "NULL", "true"]


@st.composite
def predicate(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["cmp", "in", "null", "like", "bool"] +
                                (["and", "or", "not"] if depth < 2 else [])))
    col = draw(st.sampled_from(COLS))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", ">="]))
        return f"{col} {op} {draw(st.sampled_from(LITS))}"
    if kind == "in":
        items = draw(st.lists(st.sampled_from(LITS), min_size=1, max_size=3))
        return f"{col} IN ({', '.join(items)})"
    if kind == "null":
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "like":
        return f"{col} LIKE {draw(st.sampled_from(LITS[:5] + LITS[8:10]))}"
    if kind == "bool":
        return "timing_clean"
    if kind == "not":
        return f"NOT ({draw(predicate(depth + 1))})"
    return f"({draw(predicate(depth + 1))}) {kind.upper()} ({draw(predicate(depth + 1))})"


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(predicate())
def test_python_filter_matches_duckdb(seeded_store: Store, text: str) -> None:
    meta = StoreMetadata.of(seeded_store)
    name, _ = meta.summary("evidence")
    rows = meta._python_rows("evidence", name)
    assert rows
    node = sqlglot.parse_one(text, read="duckdb")
    pred = Pred(node, [c.name for c in node.find_all(sqlglot.exp.Column)])
    try:
        mine = sorted(str(r["run_id"]) + str(r["signal"]) + str(r["_scope"])
                      for r in rows if evaluate(pred, r) is True)
    except NotSimple:
        return  # goes to DuckDB instead
    try:
        theirs = meta.cur.execute(f"SELECT run_id, signal, _scope FROM {name} "
                                  f"WHERE {pred.sql()}").fetchall()
    except Exception:
        raise AssertionError(f"Python evaluated {text!r} that DuckDB rejects") from None
    assert mine == sorted(f"{a}{b}{c}" for a, b, c in theirs), text
    assert set(META_COLUMNS) <= rows[0].keys()


def test_common_predicates_take_the_python_path(seeded_store: Store) -> None:
    meta = StoreMetadata.of(seeded_store)
    rows = meta._python_rows("evidence", meta.summary("evidence")[0])
    assert rows
    for text in ("signal = 'duration'", "region_id IS NOT NULL AND NOT timing_clean",
                 "signal IN ('duration', 'busy_ns') OR region_id LIKE 'soft%'",
                 "replay_pass >= 2"):
        node = sqlglot.parse_one(text, read="duckdb")
        pred = Pred(node, [c.name for c in node.find_all(sqlglot.exp.Column)])
        assert any(evaluate(pred, r) is True for r in rows), text
