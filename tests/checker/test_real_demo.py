"""The checker over the full demo store: every shipped H200 recording (CUPTI traces, ncu
source and raw pages, SASS, TTGIR) of softmax and matmul, one program version per kernel."""

from __future__ import annotations

from pathlib import Path

from argusdb import demo
from argusdb.api import checked
from argusdb.store.embedded import Store

SPLICE = ("SELECT region_id, median(value) AS med FROM evidence WHERE signal = 'duration' "
          "AND region_id IS NOT NULL GROUP BY region_id, program_version")


def test_ncu_replay_durations_are_not_spliced_with_cupti_timing(argus_demo_store: Store) -> None:
    findings = checked.check(SPLICE, argus_demo_store)
    assert [f.code for f in findings] == ["AR02"]
    assert "replay(38 passes" in findings[0].message
    assert findings[0].extra["standings"][0] == "clean"


def test_the_demo_question_keeps_to_clean_runs_and_is_answered(argus_demo_store: Store) -> None:
    assert checked.check(demo.QUESTION, argus_demo_store) == []
    rows = checked.execute(demo.QUESTION, argus_demo_store).to_pylist()
    assert [(r["region_id"], r["launches"]) for r in rows] == [
        ("matmul/matmul_kernel", 20), ("softmax/softmax_fwd", 20)]


def test_explain_lists_the_real_runs_behind_the_answer(argus_demo_store: Store) -> None:
    prov = checked.explain(demo.QUESTION, argus_demo_store)
    assert prov["interference_signatures"] == ["activity_tracing"]
    assert len(prov["runs"]) == 2 and len(prov["program_versions"]) == 2
    assert prov["rows"] == 40


def test_per_instruction_counters_of_one_kernel_are_answered(argus_demo_store: Store) -> None:
    sql = ("SELECT signal, sum(value) AS total FROM evidence WHERE kernel = 'softmax_fwd' "
           "AND signal IN ('inst_executed', 'warp_stall_samples') AND pc IS NOT NULL "
           "GROUP BY signal, program_version, run_id ORDER BY signal")
    assert checked.check(sql, argus_demo_store) == []
    totals = checked.execute(sql, argus_demo_store).to_pylist()
    assert [r["signal"] for r in totals] == ["inst_executed", "warp_stall_samples"]
    assert all(r["total"] > 0 for r in totals)


def test_store_path_is_not_a_file_table(argus_demo_store: Store) -> None:
    assert Path(argus_demo_store.path).exists()
    assert [f.code for f in checked.check(f"SELECT * FROM '{argus_demo_store.path}'")] == ["AR09"]
