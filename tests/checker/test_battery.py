"""The accept/refuse battery on a store built from the real recordings, and the function fuzz.

``battery.yaml`` holds questions written by hand; two more per aggregate and window function
of the function catalogue are made here: one that puts three program versions (and clean with
replayed timing) together, which must be refused, and the same function per run, which must be
accepted and run. Questions marked ``store: dist`` ask about the interval algebra over the
recorded torchrun launches (``dist_store`` of conftest.py: two versions; clean, profiled and
forced launches), those marked ``store: demo`` about the store ``argus demo`` builds
(``argus_demo_store``: one version per kernel, so each region is of one version). A question
marked ``known`` deserves its verdict but is refused by design (the reason says why): it counts
as a false refusal, listed apart. Prints the score (false accepts, false refusals); the README
quotes it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from argusdb.api import checked
from argusdb.checker.functions import catalogue
from argusdb.errors import QueryFailed
from argusdb.store.embedded import Store

BATTERY = Path(__file__).with_name("battery.yaml")
#: Argument lists tried in order until DuckDB accepts the call (its own arity and types).
ARGS = ["", "value", "abs(value) + 1", "value, 0.5", "value, value", "value > 0",
        "value::BIGINT", "signal, ','",
        "value, 3", "value::BIGINT > 0", "(value::BIGINT % 8)::INTEGER, 0, 7",
        "(value::BIGINT % 1000)::INTEGER", "value, [0.0, 1.0]", "2", "value, value > 0",
        "signal", "{'s': signal}", "value::DECIMAL(18, 2)"]
CLEAN = "run_id IN (SELECT run_id FROM run WHERE timing_clean)"


def _call(store: Store, name: str, window: bool) -> str | None:
    for a in ARGS:
        call = f"{name}({a})"
        sql = (f"SELECT {call} OVER (ORDER BY evidence_id) FROM evidence LIMIT 1" if window
               else f"SELECT {call} FROM evidence LIMIT 1")
        try:
            store.sql(sql).fetchall()
        except Exception:
            continue
        return call
    return None


def _generated(store: Store) -> list[dict[str, str]]:
    out = []
    for f in sorted(catalogue().values(), key=lambda f: f.name):
        if not f.allowed or f.kind not in ("aggregate", "window"):
            continue
        call = _call(store, f.name, f.kind == "window")
        if call is None:  # no argument list of ours fits (the score test fails on it)
            out.append({"verdict": "unfit", "sql": f.name})
            continue
        if f.kind == "window":
            over = "OVER (ORDER BY evidence_id)" if f.evidence != "rank" else \
                "OVER (ORDER BY value)"
            out.append({"verdict": "refuse", "sql": f"SELECT {call} {over} FROM evidence "
                                                    f"WHERE signal = 'duration'"})
            out.append({"verdict": "accept", "sql": f"SELECT {call} OVER (PARTITION BY run_id "
                                                    f"ORDER BY evidence_id) FROM evidence "
                                                    f"WHERE signal = 'duration'"})
        elif f.evidence == "count":
            out.append({"verdict": "accept", "sql": f"SELECT {call} FROM evidence"})
        else:
            out.append({"verdict": "refuse", "sql": f"SELECT {call} FROM evidence "
                                                    f"WHERE signal = 'duration'"})
            out.append({"verdict": "accept", "sql": f"SELECT run_id, {call} FROM evidence "
                                                    f"WHERE signal = 'duration' AND {CLEAN} "
                                                    f"GROUP BY run_id"})
    return out


@pytest.fixture(scope="module")
def battery(full_store: Store, full_built: tuple[Any, dict[str, str]],
            dist_built: tuple[Any, dict[str, str]],
            argus_demo_built: tuple[Any, dict[str, str]]) -> list[dict[str, str]]:
    ids = {"full": full_built[1], "dist": dist_built[1], "demo": argus_demo_built[1]}
    hand = [{**q, "sql": q["sql"].format(**ids[q.get("store", "full")])}
            for q in yaml.safe_load(BATTERY.read_text())]
    return hand + _generated(full_store)


@pytest.mark.slow
def test_battery_score(battery: list[dict[str, str]], full_store: Store, dist_store: Store,
                       argus_demo_store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    assert [q["sql"] for q in battery if q["verdict"] == "unfit"] == []
    assert len(battery) >= 150
    false_accepts, false_refusals, known = [], [], []
    for q in battery:
        store = {"full": full_store, "dist": dist_store,
                 "demo": argus_demo_store}[q.get("store", "full")]
        findings = checked.check(q["sql"], store)
        if q["verdict"] == "refuse" and not findings:
            false_accepts.append(q["sql"])
        elif q["verdict"] == "accept":
            if findings:
                false_refusals.append(f"{q['sql']} -> {[str(f)[:120] for f in findings]}")
                if q.get("known"):
                    known.append(f"{q['known']}: {q['sql']}")
            else:
                try:
                    checked.execute(q["sql"], store)
                except QueryFailed as exc:
                    false_refusals.append(f"{q['sql']} -> runs into {exc}")
    n_acc = sum(q["verdict"] == "accept" for q in battery)
    with capsys.disabled():
        print(f"\nbattery: {len(battery)} questions ({n_acc} accept, {len(battery) - n_acc} "
              f"refuse): {len(false_accepts)} false accepts, {len(false_refusals)} false "
              f"refusals ({100 * len(false_refusals) / len(battery):.1f} %, {len(known)} "
              f"known)")
        for x in false_refusals:
            print("  false refusal:", x[:300])
        for x in known:
            print("  known (by design):", x[:300])
    assert false_accepts == []


def test_fuzz_random_functions_are_refused_or_declared(full_store: Store) -> None:
    """Any function DuckDB lists, called on evidence, is refused or has declared semantics:
    never an aggregate that passes unseen."""
    names = [r[0] for r in full_store.sql(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE internal").fetchall()]
    rng = random.Random(11)
    for name in rng.sample(sorted(names), 200):
        if not name.replace("_", "").isalnum():
            continue  # operators
        sql = f"SELECT {name}(value) FROM evidence WHERE signal = 'duration'"
        findings = checked.check(sql, full_store)
        f = catalogue().get(name.lower())
        assert f is not None, name
        if not findings:
            assert f.allowed and (f.kind not in ("aggregate", "window")
                                  or f.evidence == "count"), (name, f)


def test_functions_catalogue_matches_duckdb(full_store: Store) -> None:
    from argusdb.checker.functions import CSV, generate

    rows = [(r[0], r[1]) for r in full_store.sql(
        "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
        "WHERE internal").fetchall()]
    assert generate(rows) == CSV.read_text()
