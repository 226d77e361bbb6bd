"""Groups and partitions over derived tables, checked against the base rows their keys trace to.

Over a CTE or subquery whose partition key is a plain column of one base stream (through
renames, ``*`` and GROUP BY keys), each partition is checked against that stream's metadata
rows grouped by the traced column, under the subquery's own predicates; keys that do not
trace (expressions, rolled-up keys, columns a window reads across, several streams) keep the
static rule. Real stores: ``argus_demo_store`` (one version per kernel) and ``full_store``
(softmax's regions in two versions); the rules of tracing on a small in-memory fake.
"""

from __future__ import annotations

from typing import Any

import pytest

from argusdb.api import checked
from argusdb.checker.metadata import MemoryMetadata
from argusdb.store.embedded import Store

#: Per region and stall reason, the attributed samples (the question of the README).
STALLS = ("WITH s AS (SELECT region_id, signal, sum(value) AS v FROM evidence "
          "WHERE evidence_class = 'attributed' AND signal LIKE 'stall\\_%' ESCAPE '\\' "
          "GROUP BY region_id, signal, kernel, program_version) ")
TOP2 = STALLS + ("SELECT * FROM (SELECT *, rank() OVER (PARTITION BY region_id ORDER BY v DESC)"
                 " AS r FROM s) WHERE r <= 2")
PER_REGION = STALLS + "SELECT region_id, sum(v) AS stalls FROM s GROUP BY region_id"


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in rows)


@pytest.mark.parametrize("sql", [TOP2, PER_REGION])
def test_one_version_per_region_is_answered(argus_demo_store: Store, sql: str) -> None:
    assert checked.check(sql, argus_demo_store) == []
    got = checked.execute(sql, argus_demo_store).to_pylist()
    # the same SQL straight on the store, without the checker's rewrite
    cur = argus_demo_store.sql(sql)
    cols = [d[0] for d in cur.description]
    want = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    assert _sorted(got) == _sorted(want)
    assert len({r["region_id"] for r in got}) == 7


@pytest.mark.parametrize("sql", [TOP2, PER_REGION])
def test_a_region_of_two_versions_is_refused_by_name(full_store: Store,
                                                     full_built: tuple[Any, dict[str, str]],
                                                     sql: str) -> None:
    ids = full_built[1]
    findings = checked.check(sql, full_store)
    assert [f.code for f in findings] == ["AR01"]
    msg = findings[0].message
    assert "in group region_id='softmax/softmax_fwd/" in msg
    assert ids["V1"] in msg and ids["V2"] in msg and ids["VM"] not in msg


def test_an_expression_key_traces(argus_demo_store: Store, full_store: Store) -> None:
    """A key that is an expression of traced columns groups the base rows by the same
    expression: one version per region in the demo store, two of softmax's in the full one."""
    sql = STALLS + ("SELECT region_id, v, rank() OVER (PARTITION BY upper(region_id) "
                    "ORDER BY v DESC) FROM s")
    assert checked.check(sql, argus_demo_store) == []
    findings = checked.check(sql, full_store)
    assert [f.code for f in findings] == ["AR01"]
    assert "in group UPPER(region_id)='SOFTMAX/SOFTMAX_FWD/" in findings[0].message


def _row(region: str, version: str) -> dict[str, Any]:
    return {"program_version": version, "run_id": f"run-{version}", "task_id": "t",
            "evidence_class": "attributed", "_standing": "clean", "signature": "replay",
            "replay_pass": None, "signal": "stall_wait", "_scope": "kernel", "unit": "samples",
            "_granularity": "region", "device": "H200", "region_id": region,
            "kernel": region.split("/")[1], "_rows": 3}


#: Regions a/k/x, a/k/y (version v1), b/m/x (v2) and c/n/z (both versions).
FAKE = MemoryMetadata({"evidence": [_row("a/k/x", "v1"), _row("a/k/y", "v1"),
                                    _row("b/m/x", "v2"), _row("c/n/z", "v1"),
                                    _row("c/n/z", "v2")]})
GROUPED = ("WITH s AS (SELECT region_id, kernel, signal, sum(value) AS v FROM evidence "
           "WHERE evidence_class = 'attributed' {} "
           "GROUP BY region_id, kernel, signal, program_version) ")


@pytest.mark.parametrize(("sql", "group"), [
    # the mixed region is named, through a CTE, renames, * and a named window
    (GROUPED.format("") + "SELECT region_id, rank() OVER (PARTITION BY region_id ORDER BY v) "
     "FROM s", "region_id='c/n/z'"),
    (GROUPED.format("") + "SELECT rg, sum(v) FROM (SELECT region_id AS rg, v FROM (SELECT * "
     "FROM s) a) b GROUP BY rg", "rg='c/n/z'"),
    (GROUPED.format("") + "SELECT r, v, rank() OVER w FROM (SELECT region_id AS r, v FROM s) t "
     "WINDOW w AS (PARTITION BY r ORDER BY v)", "r='c/n/z'"),
    # an outer filter on a traced column narrows the subquery's rows (its base rows with
    # that value are all it holds); one on a value that does not trace is not used
    (GROUPED.format("") + "SELECT region_id, sum(v) FROM s WHERE region_id <> 'c/n/z' "
     "GROUP BY region_id", None),
    (GROUPED.format("") + "SELECT region_id, sum(v) FROM s WHERE v > 0 "
     "GROUP BY region_id", "region_id='c/n/z'"),
    (GROUPED.format("") + "SELECT r, sum(v) FROM (SELECT region_id AS r, v FROM s) t "
     "WHERE r IN ('a/k/x', 'c/n/z') GROUP BY r", "r='c/n/z'"),
    # the subquery's own predicate leaves every region of one version
    (GROUPED.format("AND region_id <> 'c/n/z'") + "SELECT region_id, sum(v) FROM s "
     "GROUP BY region_id", None),
    (GROUPED.format("AND region_id <> 'c/n/z'") + "SELECT kernel, sum(v) FROM s "
     "GROUP BY kernel", None),
    # a subquery that does not group: its rows are fetched again, grouped by the traced column
    ("SELECT region, sum(v) FROM (SELECT region_id AS region, value AS v FROM evidence) t "
     "GROUP BY region", "region='c/n/z'"),
    ("SELECT region, sum(v) FROM (SELECT region_id AS region, value AS v FROM evidence "
     "WHERE region_id <> 'c/n/z') t GROUP BY region", None),
    # an expression of a traced column groups the base rows by that expression
    (GROUPED.format("AND region_id <> 'c/n/z'") + "SELECT lower(region_id) AS r, sum(v) FROM s "
     "GROUP BY r", None),
    (GROUPED.format("AND region_id <> 'c/n/z'") + "SELECT substr(region_id, 5) AS r, sum(v) "
     "FROM s GROUP BY r", "SUBSTRING(region_id, 5)='x'"),
    # keys that do not trace: the static rule (no group named)
    (GROUPED.format("AND region_id <> 'c/n/z'") + "SELECT region_id, sum(v) FROM (SELECT "
     "region_id, v FROM s UNION ALL SELECT region_id, v FROM s) GROUP BY region_id", ""),
    ("WITH s AS (SELECT region_id, sum(value) AS v FROM evidence WHERE region_id <> 'c/n/z' "
     "GROUP BY ROLLUP (region_id), program_version) SELECT region_id, max(v) FROM s "
     "GROUP BY region_id", ""),
    ("SELECT region_id, max(t) FROM (SELECT region_id, sum(value) OVER (PARTITION BY "
     "program_version) AS t FROM evidence WHERE region_id <> 'c/n/z') GROUP BY region_id", ""),
    ("SELECT region_id, max(v) FROM (SELECT a.region_id, b.value AS v FROM evidence a JOIN "
     "evidence b USING (region_id, program_version) WHERE a.region_id <> 'c/n/z') "
     "GROUP BY region_id", ""),
])
def test_tracing_on_an_in_memory_metadata(sql: str, group: str | None) -> None:
    findings = checked.check(sql, FAKE)
    if group is None:
        assert findings == []
        return
    assert [f.code for f in findings] == ["AR01"]
    msg = findings[0].message
    assert (f"in group {group} combines" in msg) if group else ("in group" not in msg)
