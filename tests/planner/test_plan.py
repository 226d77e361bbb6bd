"""Plans for each kernel and signal mix: shape, order, run groups and reasons."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.observe.planner import Plan, PlanError, plan
from argusdb.observe.planner import target as planner_target
from argusdb.observe.planner.profiler_host import TableCounter
from tests.conftest import KERNELS
from tests.planner.conftest import KERNEL_FILES

SOFTMAX = KERNELS / "softmax.py"
MATMUL = KERNELS / "matmul.py"
SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
#: The recorded pass table is CUPTI's for the H200's chip (GH100): plans that pack metrics name it.
H200 = {"target": "sm_90"}


def shape(p: Plan) -> list[tuple[str, str, str | None, list[str]]]:
    """(kind, action, run, depends_on by action) of each task, ids stripped."""
    action = {t.id: t.action for t in p.tasks}
    return [(t.kind, t.action, t.run, [action[d] for d in t.depends_on]) for t in p.tasks]


def check_invariants(p: Plan) -> None:
    p.validate()
    seen: set[str] = set()
    for t in p.tasks:  # topological: every dependency comes first
        assert set(t.depends_on) <= seen, t.id
        seen.add(t.id)
        assert t.id.startswith(p.plan_id + ".")
    collects = [t for t in p.tasks if t.kind == "collect"]
    assert [t.run for t in collects] == [f"r{i}" for i in range(1, len(collects) + 1)]
    for t in collects:  # every split names every other run and says why
        others = [o for o in collects if o is not t]
        if not others:
            assert "only run" in t.why
            continue
        splits = t.why.split(". Own run, apart from ", 1)[1]
        named = re.findall(r"((?:r\d+, )*r\d+) \((\w+)\): (\w)", splits)
        assert sorted(r for runs, _, _ in named for r in runs.split(", ")) == \
            sorted(o.run or "" for o in others), (t.id, splits)


def test_duration_alone_is_control_and_one_clean_cupti_run(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], counter=table)
    assert shape(p) == [("control", "find_launch", None, []),
                        ("collect", "cupti_timing", "r1", ["find_launch"])]
    control, timing = p.tasks
    assert control.params == {"kernel": "softmax_fwd", "launches_warmup": 5,
                              "launches_measured": 20}
    assert timing.params == {"version": "parent", "launches": 20, "launch": "all",
                             "signals": ["duration"]}
    assert "clean activity timing" in timing.why and "only run" in timing.why
    check_invariants(p)


def test_duration_and_inst_executed_are_separate_runs_with_reasons(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration", "inst_executed"], counter=table)
    assert shape(p) == [("control", "find_launch", None, []),
                        ("collect", "cupti_timing", "r1", ["find_launch"]),
                        ("collect", "ncu_source", "r2", ["find_launch"]),
                        ("synthesize", "attribute", None, ["ncu_source"])]
    timing, ncu = p.by_action("cupti_timing")[0], p.by_action("ncu_source")[0]
    assert "apart from r2 (ncu_source): Nsight Compute replays and serializes the kernel" in \
        timing.why
    assert "not clean timing" in ncu.why
    assert ncu.params["sections"] == ["SpeedOfLight", "LaunchStats", "Occupancy",
                                      "SourceCounters", "WarpStateStats"]
    # Passes of that section list as ncu reported them on the H200 (branch gpu's recording).
    assert ncu.params["expected_passes"] == 20
    assert "20 passes observed with Nsight Compute 2025.3.1.0 on the H200 (softmax_fwd)" in \
        ncu.why
    assert ncu.params["signals"] == ["inst_executed"]
    assert ncu.params["clock_control"] == "none"
    assert p.by_action("attribute")[0].params["runs"] == [ncu.id]
    check_invariants(p)


def test_exposed_latency_is_forced_wait_plus_same_timing_of_both_plus_derive(
        table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd/load", ["exposed_latency"], counter=table)
    assert shape(p) == [
        ("control", "find_launch", None, []),
        ("collect", "cupti_timing", "r1", ["find_launch"]),
        ("transform", "forced_wait", None, ["find_launch"]),
        ("collect", "cupti_timing", "r2", ["find_launch", "forced_wait"]),
        ("synthesize", "derive_exposed_latency", None, ["cupti_timing", "cupti_timing"])]
    parent, variant = p.by_action("cupti_timing")
    fw = p.by_action("forced_wait")[0]
    assert fw.params == {"region_id": "softmax/softmax_fwd/load",
                         "transform": "forced_wait:softmax/softmax_fwd/load"}
    assert parent.params["version"] == "parent" and variant.params["version"] == fw.id
    # The same collection for both sides: only the version differs.
    assert {k: v for k, v in parent.params.items() if k != "version"} == \
        {k: v for k, v in variant.params.items() if k != "version"}
    assert "one run measures one version" in variant.why
    derive = p.by_action("derive_exposed_latency")[0]
    assert derive.params == {"parent_task": parent.id, "variant_task": variant.id,
                             "region_id": "softmax/softmax_fwd/load",
                             "signals": ["exposed_latency"]}
    check_invariants(p)


@pytest.mark.parametrize("scope", [{"warp": "each"}, {"cta": "0-7"}])
def test_intra_kernel_scope_is_proton_scopes_and_instrumented_run_apart_from_clean_timing(
        table: TableCounter, scope: dict[str, str]) -> None:
    p = plan(MATMUL, "matmul/matmul_kernel/mainloop", ["duration"], scope, counter=table)
    assert shape(p) == [("control", "find_launch", None, []),
                        ("transform", "proton_scopes", None, ["find_launch"]),
                        ("collect", "cupti_timing", "r1", ["find_launch"]),
                        ("collect", "proton_instr", "r2", ["find_launch", "proton_scopes"])]
    scopes, instr = p.by_action("proton_scopes")[0], p.by_action("proton_instr")[0]
    assert scopes.params == {"region_ids": ["matmul/matmul_kernel/mainloop"],
                             "transform": "proton_scopes:matmul/matmul_kernel/mainloop"}
    assert instr.params["signals"] == ["scope_cycles"]
    assert instr.params["version"] == scopes.id
    assert {k: v for k, v in instr.params["scope"].items() if v != "all"} == scope
    assert "r1 (cupti_timing): Proton instrumentation adds instructions" in instr.why
    check_invariants(p)


def test_sub_region_duration_needs_scopes_even_at_launch_scope(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd/reduce", ["duration"], counter=table)
    assert [t.action for t in p.tasks] == ["find_launch", "proton_scopes", "cupti_timing",
                                           "proton_instr"]
    assert "region reduce has no clean duration of its own" in p.tasks[1].why


def test_metrics_are_packed_by_recorded_pass_counts(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd",
             [SOL, "dram__bytes_read.sum", "dram__bytes_write.sum"], counter=table,
             options=H200)
    a, b = p.by_action("ncu_source")
    # CUPTI 13.0's profiler host: sm__throughput alone takes 8 passes on GH100; the two DRAM
    # counters fit in one pass together.
    assert (a.params["metrics"], a.params["expected_passes"]) == ([SOL], 8)
    assert (b.params["metrics"], b.params["expected_passes"]) == (
        ["dram__bytes_read.sum", "dram__bytes_write.sum"], 1)
    assert "needs 8 replay passes by itself on GH100" in a.why
    assert "fit in 1 replay pass together" in b.why
    assert "need 8 replay passes together on GH100" in a.why
    check_invariants(p)


def test_unknown_pass_count_splits_conservatively_and_says_so(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["dram__bytes_read.sum", "lts__t_sectors_op_read.sum"],
             counter=table, options=H200)
    known, unknown = p.by_action("ncu_source")
    assert known.params["expected_passes"] == 1
    assert unknown.params["metrics"] == ["lts__t_sectors_op_read.sum"]
    assert unknown.params["expected_passes"] is None
    assert "pass count of lts__t_sectors_op_read.sum on GH100 is not known here" in unknown.why
    assert "split conservatively" in known.why


def test_without_a_target_metrics_are_not_packed_and_the_plan_says_why(
        table: TableCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner_target, "device_target", lambda: None)
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["dram__bytes_read.sum", "dram__bytes_write.sum"],
             counter=table)
    runs = p.by_action("ncu_source")
    assert [t.params["metrics"] for t in runs] == [["dram__bytes_read.sum"],
                                                  ["dram__bytes_write.sum"]]
    assert all(t.params["expected_passes"] is None for t in runs)
    assert "on an unknown target is not known" in runs[0].why
    assert any("the target is not known" in n and "--option target=" in n for n in p.notes)
    # the device's target is taken when there is one
    monkeypatch.setattr(planner_target, "device_target", lambda: "sm_90")
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["dram__bytes_read.sum", "dram__bytes_write.sum"],
             counter=table)
    assert [t.params["metrics"] for t in p.by_action("ncu_source")] == [
        ["dram__bytes_read.sum", "dram__bytes_write.sum"]]


def test_a_target_without_pass_counts_is_refused_for_metrics(table: TableCounter) -> None:
    with pytest.raises(PlanError, match=r"target sm_80 \(from the target option"):
        plan(SOFTMAX, "softmax/softmax_fwd", ["dram__bytes_read.sum"], counter=table,
             options={"target": "sm_80"})


def test_pc_sampling_is_apart_from_everything_timed(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd",
             ["duration", "stall_long_scoreboard@proton", "stall_long_sb"], counter=table)
    assert [t.action for t in p.tasks if t.kind == "collect"] == [
        "cupti_timing", "ncu_source", "proton_pcsampling"]
    pcs = p.by_action("proton_pcsampling")[0]
    assert "r1 (cupti_timing): PC sampling stops warps" in pcs.why
    assert "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in pcs.why
    assert p.by_action("attribute")[0].params["runs"] == [
        p.by_action("ncu_source")[0].id, pcs.id]
    check_invariants(p)


def test_a_launch_beyond_the_default_count_measures_more_launches(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], {"launch": "24"}, counter=table)
    assert p.tasks[0].params["launches_measured"] == 25
    assert p.tasks[1].params == {"version": "parent", "launches": 25, "launch": "24",
                                 "signals": ["duration"]}


@pytest.mark.parametrize("source", KERNEL_FILES, ids=lambda p: p.stem)
def test_every_region_of_every_kernel_plans(source: Path, table: TableCounter) -> None:
    mixes = [["duration"], ["duration", "inst_executed", "warp_stall_samples"],
             ["stall_long_sb", "dram__bytes_read.sum", SOL], ["pc_samples@proton"]]
    regions = parse_regions(ProgramSource.from_path(source))
    assert regions
    for r in regions:
        for mix in mixes:
            check_invariants(plan(source, r.region_id, mix, counter=table, options=H200))
        if r.name:
            check_invariants(plan(source, r.region_id, ["duration"], {"warp": "each"},
                                  counter=table))


def test_all_signal_families_in_one_plan(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd/load",
             ["duration", "exposed_latency", "inst_executed", "dram__bytes_read.sum",
              "stall_lg_throttle@proton"], counter=table)
    check_invariants(p)
    assert len(p.by_action("cupti_timing")) == 2  # the parent timing serves both signals
    assert "also the parent side of exposed_latency" in p.by_action("cupti_timing")[0].why
    assert p.request == {"source": "softmax.py", "region": "softmax/softmax_fwd/load",
                         "signals": ["duration", "exposed_latency", "inst_executed",
                                     "dram__bytes_read.sum", "stall_lg_throttle@proton"],
                         "scope": {}}


def test_cycle_is_refused() -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"])
    p.tasks[0].depends_on = [p.tasks[1].id]
    with pytest.raises(PlanError, match="cycle"):
        p.validate()


@pytest.mark.parametrize(("region", "signals", "scope", "message"), [
    ("softmax/softmax_fwd/lod", ["duration"], None,
     "no region 'softmax/softmax_fwd/lod'. Did you mean 'softmax/softmax_fwd/load'"),
    ("softmax/softmax_fwd", ["duratoin"], None, "Did you mean 'duration'?"),
    ("softmax/softmax_fwd", ["stall_long_scoreboard"], None, "'stall_long_sb'"),
    ("softmax/softmax_fwd", ["dram__bytes_read.summ"], None,
     "Did you mean dram__bytes_read.sum"),
    ("softmax/softmax_fwd", ["dram__bytes_red.sum"], None, "Did you mean dram__bytes_read.sum"),
    ("softmax/softmax_fwd", [], None, "no signals requested"),
    ("softmax/softmax_fwd", ["duration"], {"wrap": "each"}, "Did you mean 'warp'?"),
    ("softmax/softmax_fwd", ["duration"], {"warp": "some"}, "a value is 'all', 'each'"),
    ("softmax/softmax_fwd", ["inst_executed"], {"warp": "each"},
     "only Proton scopes (signal 'duration') resolve warp"),
    # the only signal asked cannot apply: nothing is left to plan
    ("softmax/softmax_fwd", ["exposed_latency"], None, "is the whole kernel"),
    ("softmax/softmax_fwd/store", ["exposed_latency"], None,
     "exposed_latency of softmax/softmax_fwd/store is not applicable: softmax.py: region "
     "softmax/softmax_fwd/store assigns no tl.load result"),
])
def test_bad_requests_say_what_and_how_to_fix(region: str, signals: list[str],
                                               scope: dict[str, str] | None,
                                               message: str) -> None:
    with pytest.raises(PlanError, match=None) as exc:
        plan(SOFTMAX, region, signals, scope)
    assert message in str(exc.value)


def test_a_kernel_at_warp_scope_is_timed_through_its_regions(table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], {"warp": "each"}, counter=table)
    scopes = p.by_action("proton_scopes")[0]
    assert scopes.params["region_ids"] == ["softmax/softmax_fwd/load",
                                           "softmax/softmax_fwd/reduce",
                                           "softmax/softmax_fwd/store"]
    assert scopes.params["transform"] == ("proton_scopes:softmax/softmax_fwd/load,"
                                          "softmax/softmax_fwd/reduce,softmax/softmax_fwd/store")


def test_a_signal_that_cannot_apply_is_not_applicable_and_the_others_are_planned() -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd/store", ["exposed_latency", "inst_executed"])
    assert p.request["not_applicable"] == {"exposed_latency": (
        "softmax.py: region softmax/softmax_fwd/store assigns no tl.load result. force a wait "
        "in a region that loads from global memory (x = tl.load(...))")}
    assert [t.action for t in p.tasks] == ["find_launch", "ncu_source", "attribute"]
    assert any(n.startswith("exposed_latency of softmax/softmax_fwd/store: not applicable")
               for n in p.notes)
