"""The pass table recorded from CUPTI's profiler host, and the live counter where it exists."""

from __future__ import annotations

import pytest

from argusdb.observe.planner.profiler_host import CtypesCounter, TableCounter, live_counter

SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"


def test_table_says_how_it_was_produced(table: TableCounter) -> None:
    made = table.doc["produced_by"]
    assert made["counter"] == "CUPTI profiler host via libcupti"
    assert made["cupti"] == "CUPTI 13.0 (API 130001)"
    assert made["command"].startswith("python -m argusdb.observe.planner.record_passes")
    assert table.doc["chip"] == "GH100"


def test_recorded_pass_counts(table: TableCounter) -> None:
    assert table.passes("GH100", ["dram__bytes_read.sum"]) == 1
    assert table.passes("GH100", [SOL]) == 8
    assert table.passes("GH100", ["dram__bytes_write.sum", "dram__bytes_read.sum"]) == 1
    assert table.passes("GH100", [SOL, "dram__bytes_read.sum"]) == 8
    # Not recorded, or another chip: unknown, never guessed.
    assert table.passes("GH100", ["lts__t_sectors_op_read.sum"]) is None
    assert table.passes("AD102", ["dram__bytes_read.sum"]) is None


def test_metric_names_come_from_cupti(table: TableCounter) -> None:
    assert {k: len(v) for k, v in table.doc["base_metrics"].items()} == {
        "counter": 3389, "ratio": 205, "throughput": 56}
    assert table.is_metric("dram__bytes_read.sum")
    assert table.is_metric(SOL)
    assert table.is_metric("smsp__average_inst_executed_per_warp.ratio")
    # Base names with dots, as ncu's raw page prints them.
    assert table.is_metric("FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained"
                           "_elapsed")
    assert not table.is_metric("dram__bytes_read")  # no rollup
    assert not table.is_metric("dram__bytes_read.ratio")  # a counter has no .ratio
    assert table.suggest("dram__bytes_read.summ")[0] == "dram__bytes_read.sum"


def test_live_counter_agrees_with_the_table(table: TableCounter) -> None:
    counter = live_counter()
    if counter is None:
        pytest.skip("no libcupti with the profiler host API on this machine")
    for entry in table.doc["lists"]:
        assert counter.passes("GH100", entry["metrics"]) == entry["passes"], entry
    if isinstance(counter, CtypesCounter):
        assert counter.passes("GH100", ["no_such__metric.sum"]) is None


def test_table_agrees_with_cupti_python_13_4_on_the_h200(table: TableCounter) -> None:
    """The table (CUPTI 13.0, host only, no GPU) against cupti-python 13.4's profiler_host run
    on the H200 by branch gpu (tests/data/gpu/profiler_host.json): same pass counts."""
    import json

    from tests.conftest import DATA

    h200 = json.loads((DATA / "gpu" / "profiler_host.json").read_text())
    assert h200["chip"] == "GH100"
    compared = 0
    for entry in table.doc["lists"]:
        ms = entry["metrics"]
        theirs = h200["passes_per_metric"].get(ms[0]) if len(ms) == 1 else next(
            (v["passes"] for v in h200["passes_per_list"].values()
             if sorted(v.get("valid") or []) == ms and v["valid"] == v["metrics"]), None)
        if isinstance(theirs, int):
            assert theirs == entry["passes"], ms
            compared += 1
    # 39 of the table's 56 lists were recorded there too (the rest: the planner's pair questions).
    assert (compared, len(table.doc["lists"])) == (39, 56)
