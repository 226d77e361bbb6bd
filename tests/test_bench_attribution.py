"""Smoke test of bench/bench_attribution.py: replicas are runs of their own, attributed alike."""

from __future__ import annotations

from argusdb.store import materialize
from argusdb.store.embedded import Store
from bench.bench_attribution import build


def test_replicated_runs_attribute_like_their_originals(store: Store) -> None:
    rows = build(store, 4)
    per_run = store.rows("SELECT kernel, count(DISTINCT run_id) AS runs, count(*) AS n "
                         "FROM attribution_source GROUP BY kernel ORDER BY kernel")
    assert [r["runs"] for r in per_run] == [2, 2] and sum(r["n"] for r in per_run) == rows
    materialize.ensure_fresh(store)
    regions = store.rows("SELECT region_id, count(DISTINCT value) AS values, count(*) AS runs "
                         "FROM region_attribution WHERE signal = 'inst_executed' "
                         "GROUP BY region_id ORDER BY region_id")
    assert len(regions) == 7 and all(r == {**r, "values": 1, "runs": 2} for r in regions)
    assert all(r["ok"] for r in store.rows("SELECT ok FROM attribution_conservation"))
