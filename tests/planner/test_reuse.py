"""Reuse of evidence in a store built from the real H200 demo artefacts."""

from __future__ import annotations

from argusdb import demo
from argusdb.ingest import IngestResult
from argusdb.observe.planner import plan
from argusdb.observe.planner.profiler_host import TableCounter
from argusdb.store.embedded import Store
from tests.conftest import DEMO, KERNELS, ROOT

SOFTMAX = KERNELS / "softmax.py"


def cupti_run(st: Store, program: str) -> str:
    return st.rows("SELECT r.run_id FROM run r JOIN program_version v USING (program_version) "
                   "WHERE v.program = ? AND r.collector = 'cupti'", [program])[0]["run_id"]


def test_clean_timing_in_the_store_is_reused(demo_store: Store, table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], store=demo_store, counter=table)
    timing = p.by_action("cupti_timing")[0]
    run_id = cupti_run(demo_store, "softmax")
    assert timing.reuse is not None and timing.reuse["run_id"] == run_id
    assert "(activity_tracing)" in timing.reuse["why"]
    assert "already holds duration for softmax_fwd at launch=all" in timing.reuse["why"]


def test_reuse_pins_the_program_version_with_options(demo_store: Store,
                                                     table: TableCounter) -> None:
    same = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], store=demo_store, counter=table,
                options=dict(demo.OPTIONS))
    assert same.by_action("cupti_timing")[0].reuse is not None
    other = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], store=demo_store, counter=table,
                 options={**demo.OPTIONS, "num_warps": "8"})
    assert other.by_action("cupti_timing")[0].reuse is None
    assert other.notes and "nothing reused" in other.notes[0]


def test_reuse_needs_the_scope_covered(demo_store: Store, table: TableCounter) -> None:
    # The demo trace has 20 launches (0..19): launch 19 is covered, launch 24 is not.
    hit = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], {"launch": "19"},
               store=demo_store, counter=table)
    assert hit.by_action("cupti_timing")[0].reuse is not None
    miss = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], {"launch": "24"},
                store=demo_store, counter=table)
    t = miss.by_action("cupti_timing")[0]
    assert t.reuse is None
    assert (f"run {cupti_run(demo_store, 'softmax')} not reused: has no duration for "
            f"softmax_fwd at launch=24") in t.why


def test_only_parent_collections_are_reused(demo_store: Store, table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd/load", ["exposed_latency"], store=demo_store,
             counter=table)
    parent, variant = p.by_action("cupti_timing")
    assert parent.reuse is not None and variant.reuse is None


def test_a_changed_source_is_another_version(demo_store: Store, table: TableCounter,
                                             tmp_path: object) -> None:
    from pathlib import Path

    changed = Path(str(tmp_path)) / "softmax.py"
    changed.write_text(SOFTMAX.read_text() + "\n# edited\n")
    p = plan(changed, "softmax/softmax_fwd", ["duration"], store=demo_store, counter=table)
    assert p.by_action("cupti_timing")[0].reuse is None
    assert p.notes == ["nothing reused: no version of softmax.py with this source text in the "
                       "store"]


def test_timing_under_replay_is_not_reused_for_clean_timing(store: Store,
                                                            table: TableCounter) -> None:
    # One clean cupti run whose signature we then mark as replayed: it must not be reused.
    from argusdb.collectors.regions import ProgramSource
    from argusdb.ingest import ingest_path

    res = ingest_path(store, DEMO / "softmax" / "softmax.cupti.jsonl",
                      ProgramSource.from_path(SOFTMAX), dict(demo.OPTIONS))
    store.sql("UPDATE run SET timing_clean = false, counter_replay = true, "
              "signature = 'replay(38 passes, full)+activity_tracing' WHERE run_id = ?",
              [res.run_id])
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["duration"], store=store, counter=table)
    t = p.by_action("cupti_timing")[0]
    assert t.reuse is None
    assert (f"run {res.run_id} not reused: its timing is not clean "
            f"(replay(38 passes, full)+activity_tracing)") in t.why


def test_ncu_source_page_in_the_store_is_reused(demo_store: Store, table: TableCounter) -> None:
    p = plan(SOFTMAX, "softmax/softmax_fwd", ["inst_executed", "stall_long_sb"],
             store=demo_store, counter=table)
    ncu = p.by_action("ncu_source")[0]
    run_id = demo_store.rows(
        "SELECT r.run_id FROM run r JOIN program_version v USING (program_version) "
        "WHERE v.program = 'softmax' AND r.kind = 'ncu.source_csv'")[0]["run_id"]
    assert ncu.reuse is not None and ncu.reuse["run_id"] == run_id
    assert "already holds inst_executed, stall_long_sb for softmax_fwd" in ncu.reuse["why"]
    assert "does not state its clock control" in ncu.reuse["why"]
    # Attribution still runs (it reads the reused run).
    assert p.by_action("attribute")[0].params["runs"] == [ncu.id]


def test_counters_from_a_multi_pass_replay_are_reused_alone_not_as_a_simultaneous_group(
        demo_store: Store, table: TableCounter) -> None:
    raw = demo_store.rows(
        "SELECT r.run_id FROM run r JOIN program_version v USING (program_version) "
        "WHERE v.program = 'softmax' AND r.kind = 'ncu.raw_csv'")[0]["run_id"]
    sol = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    p = plan(SOFTMAX, "softmax/softmax_fwd", [sol, "dram__bytes_read.sum",
                                              "dram__bytes_write.sum"],
             store=demo_store, counter=table)
    alone, group = p.by_action("ncu_source")
    assert alone.params["metrics"] == [sol]
    assert alone.reuse is not None and alone.reuse["run_id"] == raw
    # The --set full recording took 38 passes and does not say which pass each counter was in.
    assert group.reuse is None
    assert (f"run {raw} not reused: it took 38 replay passes and does not record one shared "
            f"pass for dram__bytes_read.sum, dram__bytes_write.sum") in group.why


GPU = ROOT / "tests" / "data" / "gpu"
KERNEL = ROOT / "argusdb" / "demo" / "kernels" / "softmax.py"


def _parent_and_variant(store: Store, region: str, task_id: str | None = None
                        ) -> tuple[IngestResult, IngestResult]:
    """The softmax's clean timing run and its forced-wait variant's, recorded on the H200, with
    the variant bound to its parent as a forced wait at ``region`` (made by task ``task_id``)."""
    from argusdb.collectors.regions import ProgramSource
    from argusdb.ingest import ingest_path

    parent = ingest_path(store, GPU / "softmax.default.run1.cupti.jsonl",
                         ProgramSource.from_path(KERNEL))
    variant = ingest_path(store, GPU / "softmax.default.fw_load.cupti.jsonl",
                          ProgramSource("softmax.py", (GPU / "variants" /
                                                       "softmax.default.fw_load.py").read_text()))
    store.sql("UPDATE program_version SET parent_version = ?, transform = ?, transform_task_id = ? "
              "WHERE program_version = ?",
              [parent.program_version, f"forced_wait:{region}", task_id, variant.program_version])
    return parent, variant


def test_forced_wait_variant_timing_in_the_store_is_reused(store: Store,
                                                          table: TableCounter) -> None:
    """Parent and forced-wait variant timings recorded on the H200 (branch gpu's recording),
    with the variant bound to its parent the way the runner binds it."""
    parent, variant = _parent_and_variant(store, "softmax/softmax_fwd/load",
                                          "p-earlier.forced_wait")
    p = plan(KERNEL, "softmax/softmax_fwd/load", ["exposed_latency"], store=store,
             counter=table)
    timing_parent, timing_variant = p.by_action("cupti_timing")
    assert timing_parent.reuse is not None and timing_parent.reuse["run_id"] == parent.run_id
    assert timing_variant.reuse is not None and timing_variant.reuse["run_id"] == variant.run_id
    assert (f"variant {variant.program_version} (forced_wait:softmax/softmax_fwd/load)"
            in timing_variant.reuse["why"])
    fw = p.by_action("forced_wait")[0]
    assert fw.reuse == {"run_id": None, "program_version": variant.program_version,
                        "why": f"its only consumer {timing_variant.id} reuses run "
                               f"{variant.run_id}"}
    # The derivation still runs: it reads both reused runs.
    assert p.by_action("derive_exposed_latency")[0].reuse is None


def test_a_variant_of_another_region_is_not_reused(store: Store, table: TableCounter) -> None:
    _parent_and_variant(store, "softmax/softmax_fwd/other")
    p = plan(KERNEL, "softmax/softmax_fwd/load", ["exposed_latency"], store=store,
             counter=table)
    assert p.by_action("cupti_timing")[1].reuse is None
    assert p.by_action("forced_wait")[0].reuse is None


def test_the_raw_page_is_not_reused_for_a_source_page_request(store: Store,
                                                              table: TableCounter) -> None:
    """Only the raw page (kernel totals) of an Nsight Compute run is stored: a request for the
    per-instruction source page must collect it, not take the kernel totals for it."""
    from argusdb.collectors.regions import ProgramSource
    from argusdb.ingest import ingest_path

    kernel = ROOT / "argusdb" / "demo" / "kernels" / "softmax.py"
    raw = ingest_path(store, GPU / "softmax.default.raw.csv", ProgramSource.from_path(kernel))
    p = plan(kernel, "softmax/softmax_fwd/load", ["inst_executed"], store=store, counter=table)
    (src,) = p.by_action("ncu_source")
    assert src.reuse is None
    assert (f"run {raw.run_id} not reused: it is the ncu.raw_csv export (kernel totals), not "
            f"the source page") in src.why
