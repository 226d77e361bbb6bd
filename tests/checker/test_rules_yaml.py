"""The YAML pass/fail cases of every rule (``tests/checker/rules/<code>.yaml``).

A ``fail_str`` must be refused by its rule (at ``line``/``col`` when given, with a remedy); a
``pass_str`` must pass every rule and then run. ``store`` picks the store: ``seeded`` (real
artefacts + seed rows, default), ``demo`` (real artefacts only), ``full`` (every demo
artefact), ``dist`` (recorded torchrun launches: two versions, clean, profiled and forced),
``samplers`` (one launch's stall reasons from Nsight Compute and Proton) or ``none`` (static
rules).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from argusdb.api import checked
from argusdb.checker.rules import all_rules
from argusdb.store.embedded import Store

RULES = Path(__file__).parent / "rules"


def _cases() -> list[Any]:
    out = []
    for f in sorted(RULES.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        for name, case in doc.items():
            if name.startswith("test_"):
                out.append(pytest.param(doc["rule"], doc.get("store", "seeded"), case,
                                        id=f"{doc['rule']}-{name}"))
    return out


CASES = _cases()


def _ids(kind: str, ids: dict[str, str], *built: tuple[Any, dict[str, str]]) -> dict[str, str]:
    """The ids a case of store ``kind`` refers to (``{V1}``, ``{RN}`` ...)."""
    full, dist, samplers = (b[1] for b in built)
    return {"full": full, "dist": dist, "samplers": samplers}.get(kind, ids)


def test_at_least_40_cases_and_every_rule_has_both_kinds() -> None:
    assert len(CASES) >= 40
    by_rule: dict[str, set[str]] = {}
    for p in CASES:
        code, _, case = p.values
        by_rule.setdefault(code, set()).add("fail" if "fail_str" in case else "pass")
    assert {r.code for r in all_rules()} <= set(by_rule)
    assert all(kinds == {"fail", "pass"} for kinds in by_rule.values()), by_rule


@pytest.mark.parametrize(("code", "which", "case"), CASES)
def test_case(code: str, which: str, case: dict[str, Any], seeded_store: Store,
              demo_store: Store, full_store: Store, dist_store: Store, samplers_store: Store,
              ids: dict[str, str], full_built: tuple[Any, dict[str, str]],
              dist_built: tuple[Any, dict[str, str]],
              samplers_built: tuple[Any, dict[str, str]]) -> None:
    kind = case.get("store", which)
    store = {"seeded": seeded_store, "demo": demo_store, "full": full_store,
             "dist": dist_store, "samplers": samplers_store, "none": None}[kind]
    sql = (case.get("fail_str") or case["pass_str"]).format(
        **_ids(kind, ids, full_built, dist_built, samplers_built))
    findings = checked.check(sql, store)
    if "pass_str" in case:
        assert findings == [], [str(f) for f in findings]
        if store is not None:
            table = checked.execute(sql, store)
            assert table.num_columns >= 1
        return
    mine = [f for f in findings if f.code == code]
    assert mine, f"expected {code}, got {[str(f) for f in findings]}"
    f = mine[0]
    assert f.remedy and f.message
    if "line" in case:
        assert (f.line, f.col) == (case["line"], case["col"]), str(f)
    if "message" in case:
        assert case["message"] in f.message


@pytest.mark.parametrize(("code", "which", "case"), CASES)
def test_case_on_an_in_memory_metadata(code: str, which: str, case: dict[str, Any],
                                       memory_stores: dict[str, Any], ids: dict[str, str],
                                       full_built: tuple[Any, dict[str, str]],
                                       dist_built: tuple[Any, dict[str, str]],
                                       samplers_built: tuple[Any, dict[str, str]]) -> None:
    """The same verdict from the in-memory fake as from the store (the checker is pure)."""
    kind = case.get("store", which)
    if kind == "none":
        return
    sql = (case.get("fail_str") or case["pass_str"]).format(
        **_ids(kind, ids, full_built, dist_built, samplers_built))
    findings = checked.check(sql, memory_stores[kind])
    if "pass_str" in case:
        assert findings == [], [str(f) for f in findings]
    else:
        assert code in {f.code for f in findings}, [str(f) for f in findings]
