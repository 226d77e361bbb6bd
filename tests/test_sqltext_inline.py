"""Parameters written into library SQL as literals (argusdb.schema.sqltext.inline) give what
DuckDB gives them bound: the same values and types; placeholders in quotes and comments stay."""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argusdb.schema.sqltext import inline

plain = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))


CON = duckdb.connect()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(plain, st.lists(st.one_of(st.none(), st.text(max_size=8)),
                                          min_size=1, max_size=4)), min_size=1, max_size=4))
def test_inlined_values_are_the_bound_ones(params: list[Any]) -> None:
    con = CON
    sql = "SELECT " + ", ".join("?, typeof(?)" for _ in params)
    doubled = [v for p in params for v in (p, p)]
    text = inline(sql, doubled)
    flat = [x for v in doubled for x in (v if isinstance(v, list) else [v])]
    if any(isinstance(x, str) and "\x00" in x for x in flat):  # left bound (see below)
        return
    assert text is not None
    got, want = con.execute(text).fetchall(), con.execute(sql, doubled).fetchall()
    assert [_same(a, b) for a, b in zip(got[0], want[0], strict=True)] == [True] * len(got[0])


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b and type(a) is type(b))


def test_placeholders_in_quotes_and_comments_stay() -> None:
    sql = "SELECT '?''?', \"a?\" -- ?\n, ? /* ? */ FROM (SELECT 1 AS \"a?\")"
    assert inline(sql, [7]) == "SELECT '?''?', \"a?\" -- ?\n, 7 /* ? */ FROM (SELECT 1 AS \"a?\")"
    assert duckdb.connect().execute(inline(sql, [7]) or "").fetchall() == [("?'?", 1, 7)]


@pytest.mark.parametrize(("sql", "params"), [
    ("SELECT ?, ?", [1]),  # fewer parameters than placeholders
    ("SELECT ?", [1, 2]),  # more
    ("SELECT $1", [1]),  # another kind of placeholder
    ("SELECT ?", [[]]),  # an empty list: its type is DuckDB's to choose
    ("SELECT ?", [[[1]]]),  # nested lists
    ("SELECT ?", [b"bytes"]),  # not a plain value
    ("SELECT ?", ["a\x00b"]),  # a NUL would end the literal
])
def test_what_cannot_be_written_exactly_is_left_bound(sql: str, params: list[Any]) -> None:
    assert inline(sql, params) is None
