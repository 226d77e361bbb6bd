"""Property-based fuzzing of parse + check (hypothesis).

Random and garbled text never raises anything but a list of findings; queries generated from
the compatible forms of the rules (grouped by version and run, filtered to clean timing) are
accepted and answered.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argusdb.api import checked
from argusdb.errors import Finding
from argusdb.store.embedded import Store

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

WORDS = ["SELECT", "FROM", "WHERE", "GROUP", "BY", "JOIN", "ON", "evidence", "run", "value",
         "signal", "program_version", "(", ")", ",", "=", "'duration'", "*", "median", "count",
         ";", "DROP", "TABLE", "read_csv", "'/etc/passwd'", "AS", "e", "e.", "1", "OVER",
         "PARTITION", "UNION", "ALL", "WITH", "x", "LIMIT", "--", "/*", "\"", "'", "->", "::"]


@FAST
@given(st.text(max_size=300))
def test_random_text_gives_findings_never_exceptions(text: str) -> None:
    out = checked.check(text)
    assert isinstance(out, list) and all(isinstance(f, Finding) for f in out)


@FAST
@given(st.lists(st.sampled_from(WORDS), max_size=40))
def test_garbled_sql_gives_findings_never_exceptions(demo_store: Store,
                                                     words: list[str]) -> None:
    out = checked.check(" ".join(words), demo_store)
    assert isinstance(out, list) and all(isinstance(f, Finding) for f in out)


AGGS = ["median(value)", "avg(value)", "min(value)", "max(value)", "count(*)", "sum(value)",
        "quantile_cont(value, 0.9)", "stddev_pop(value)"]
KEYS = ["region_id", "kernel", "launch", "unit"]


@st.composite
def compatible_query(draw: st.DrawFn) -> str:
    aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=3, unique=True))
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
    group = ["program_version", "run_id", *keys]
    cols = ", ".join([*group, *(f"{a} AS a{i}" for i, a in enumerate(aggs))])
    where = draw(st.sampled_from(["signal = 'duration'", "signal = 'duration' AND launch <> '3'",
                                  "region_id IS NOT NULL AND signal = 'duration'"]))
    shape = draw(st.sampled_from(["plain", "cte", "clean"]))
    if shape == "clean":
        return (f"SELECT e.program_version, e.run_id, {', '.join(aggs)} FROM evidence e "
                f"JOIN run r USING (run_id) WHERE r.timing_clean AND e.{where} "
                f"GROUP BY e.program_version, e.run_id")
    q = f"SELECT {cols} FROM evidence WHERE {where} GROUP BY {', '.join(group)}"
    if shape == "cte":
        q = f"WITH t AS ({q}) SELECT * FROM t ORDER BY program_version"
    return q


@FAST
@given(compatible_query())
def test_generated_compatible_queries_are_accepted_and_answered(seeded_store: Store,
                                                                 sql: str) -> None:
    assert checked.check(sql, seeded_store) == []
    assert checked.execute(sql, seeded_store).num_rows > 0


@pytest.mark.parametrize("sql", ["SELECT median(value) FROM evidence",
                                 "SELECT sum(value) FROM evidence WHERE signal = 'duration'"])
def test_generator_baseline_is_refused_without_grouping(seeded_store: Store, sql: str) -> None:
    assert checked.check(sql, seeded_store)
