"""The checker over the full demo store: every shipped H200 recording (CUPTI traces, ncu
source and raw pages, SASS, TTGIR) of softmax and matmul, one program version per kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from argusdb import checker, demo
from argusdb.store import Store

SPLICE = ("SELECT region_id, median(value) AS med FROM evidence WHERE signal = 'duration' "
          "AND region_id IS NOT NULL GROUP BY region_id, program_version")


@pytest.fixture(scope="module")
def full_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    with Store.open(path, create=True) as st:
        demo.build(st)
    st = Store.open(path, read_only=True)
    yield st
    st.close()


def test_ncu_replay_durations_are_not_spliced_with_cupti_timing(full_demo: Store) -> None:
    findings = checker.check(SPLICE, full_demo)
    assert [f.code for f in findings] == ["AR02"]
    assert "replay(38 passes" in findings[0].message
    assert findings[0].extra["standings"][0] == "clean"


def test_the_demo_question_keeps_to_clean_runs_and_is_answered(full_demo: Store) -> None:
    assert checker.check(demo.QUESTION, full_demo) == []
    rows = checker.execute(demo.QUESTION, full_demo).to_pylist()
    assert [(r["region_id"], r["launches"]) for r in rows] == [
        ("matmul/matmul_kernel", 20), ("softmax/softmax_fwd", 20)]


def test_explain_lists_the_real_runs_behind_the_answer(full_demo: Store) -> None:
    prov = checker.explain(demo.QUESTION, full_demo)
    assert prov["interference_signatures"] == ["activity_tracing"]
    assert len(prov["runs"]) == 2 and len(prov["program_versions"]) == 2
    assert prov["rows"] == 40


def test_per_instruction_counters_of_one_kernel_are_answered(full_demo: Store) -> None:
    sql = ("SELECT signal, sum(value) AS total FROM evidence WHERE kernel = 'softmax_fwd' "
           "AND signal IN ('inst_executed', 'warp_stall_samples') AND pc IS NOT NULL "
           "GROUP BY signal, program_version, run_id ORDER BY signal")
    assert checker.check(sql, full_demo) == []
    totals = checker.execute(sql, full_demo).to_pylist()
    assert [r["signal"] for r in totals] == ["inst_executed", "warp_stall_samples"]
    assert all(r["total"] > 0 for r in totals)


def test_store_path_is_not_a_file_table(full_demo: Store) -> None:
    assert Path(full_demo.path).exists()
    assert [f.code for f in checker.check(f"SELECT * FROM '{full_demo.path}'")] == ["AR09"]
