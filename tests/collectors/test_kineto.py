"""Kineto / torch.profiler traces: public HTA traces (A100) and our own H200 recording."""

from __future__ import annotations

import gzip
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from argusdb.collectors import detect
from argusdb.collectors.base import EVIDENCE_SCHEMA, KERNEL_LAUNCH_SCHEMA, Artefact
from argusdb.collectors.chrome import us_to_ns
from argusdb.collectors.kineto import KinetoTraceReader
from argusdb.collectors.kineto.hostops import LaunchIndex
from argusdb.collectors.kineto.trace import counter_signal
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.collectors.batches import tables
from tests.collectors.refusal import refused
from tests.conftest import DATA

KINETO = DATA / "kineto"
TRITON = KINETO / "triton_example.json.gz"
SIMPLE_ADD = KINETO / "benchmark_result_493459_1694039959_trace.json.gz"
CUPTI_PROFILER = KINETO / "benchmark_result_924719_1679055439_trace.json.gz"
H200 = DATA / "proton" / "torch_trace.json"


def read(path: Path) -> Artefact:
    reader = detect(path)
    assert isinstance(reader, KinetoTraceReader)
    return reader.read(path)


def test_triton_kernel_with_exact_ns_host_op_and_device() -> None:
    art = read(TRITON)
    t = tables(art)
    assert t["kernel_launch"].schema == KERNEL_LAUNCH_SCHEMA
    assert t["evidence"].schema == EVIDENCE_SCHEMA
    [k] = t["kernel_launch"].to_pylist()
    # ts 2413669097444.592 µs and dur 1.76 µs in the file: exact ns, no float rounding.
    assert k["kernel"] == "triton_poi_fused_add_cos_sin_0" and k["launch"] == 0
    assert (k["start_ns"], k["dur_ns"], k["end_ns"]) == (2413669097444592, 1760, 2413669097446352)
    assert k["host_op"] == "triton_poi_fused_add_cos_sin_0" and k["launch_api"] == "cuLaunchKernel"
    assert (k["grid_x"], k["grid_y"], k["grid_z"], k["block_x"]) == (1, 1, 1, 128)
    assert (k["registers"], k["shared_bytes"], k["device_id"], k["stream_id"]) == (16, 0, 0, 7)
    assert k["correlation_id"] == 35
    [ev] = t["evidence"].to_pylist()
    assert (ev["signal"], ev["value"], ev["unit"], ev["launch"]) == ("duration", 1760.0, "ns", "0")
    assert art.target == "sm_80" and art.device["name"] == "NVIDIA A100-PG509-200"
    assert art.export_schema == "1"
    assert art.meta["traceName"] == "my_kernel_trace.json"
    assert art.meta["displayTimeUnit"] == "ms"
    assert art.meta["baseTimeNanoseconds"] == 1727743122000000000
    itf = art.interference
    # host-op tracing perturbs timing: a Kineto trace with cpu_op events is not timing-clean
    assert itf.torch_profiler and itf.activity_tracing and not itf.timing_clean()


def test_old_trace_links_host_ops_through_runtime_calls() -> None:
    # In this PyTorch 2.1 trace, a kernel's 'External id' is its correlation ID, not a cpu_op's:
    # the host op comes from the cpu_op enclosing the cudaLaunchKernel call.
    t = tables(read(SIMPLE_ADD))
    rows = t["kernel_launch"].to_pylist()
    assert len(rows) == 79 and t["evidence"].num_rows == 79
    hosts = Counter(r["host_op"] for r in rows)
    assert hosts["aten::cudnn_convolution"] == 30 and hosts["aten::addmm"] == 12
    assert None not in hosts
    assert {r["launch_api"] for r in rows} == {"cudaLaunchKernel"}
    sgemm = [r for r in rows if r["kernel"] == "ampere_sgemm_32x32_sliced1x4_tn"]
    assert [r["launch"] for r in sgemm] == list(range(6))
    assert [r["dur_ns"] for r in sgemm] == [868000, 401000, 97000, 817000, 392000, 98000]
    assert (sgemm[0]["grid_x"], sgemm[0]["grid_y"], sgemm[0]["shared_bytes"]) == (128, 4, 32768)


def test_cupti_range_profiler_counters_are_evidence_under_replay() -> None:
    art = read(CUPTI_PROFILER)
    t = tables(art)
    assert "kernel_launch" not in t  # the range-profiler trace has no kernel activity events
    ev = t["evidence"].to_pylist()
    assert len(ev) == 77 * 9 and art.meta["profiler_ranges"] == 77
    signals = {r["signal"] for r in ev}
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on_sum" in signals and len(signals) == 9
    ffma = [r for r in ev if r["signal"] == "smsp__sass_thread_inst_executed_op_ffma_pred_on_sum"]
    assert ffma[0]["value"] == 38731776 and ffma[0]["launch"] == "0"
    assert ffma[1]["value"] == 9119334400 and ffma[1]["kernel"] is None  # '__missing__' range
    assert {r["unit"] for r in ev} == {"count"}
    assert len({r["src_row"] for r in ev}) == len(ev)
    itf = art.interference
    assert itf.counter_replay and itf.torch_profiler and not itf.timing_clean()
    assert itf.signature() == "replay(? passes, ?)+torch_profiler+activity_tracing"


def test_counter_names_become_snake_case() -> None:
    assert counter_signal("dram__bytes_read.sum.per_second") == "dram__bytes_read_sum_per_second"


def test_h200_trace_binds_the_triton_kernel_to_its_region(store: Store) -> None:
    art = read(H200)
    assert art.target == "sm_90" and art.device["name"] == "NVIDIA H200"
    k = [r for r in tables(art)["kernel_launch"].to_pylist() if r["kernel"] == "k"]
    assert len(k) == 1 and k[0]["dur_ns"] == 12576 and k[0]["launch_api"] == "cuLaunchKernelEx"
    assert k[0]["grid_x"] == 4096 and k[0]["host_op"] is None  # launched by Triton, not a torch op
    res = ingest_path(store, H200, program=ProgramSource.from_path(DATA / "proton" /
                                                                   "proton_probe.py"))
    # The program's kernel k; the trace's 4 other launches (cuBLAS, torch RNG) are a timeline
    # run of their own version.
    assert res.rows == {"evidence": 1, "kernel_launch": 1}
    assert res.other is not None and res.other["rows"] == {"evidence": 4, "kernel_launch": 4}
    got = store.rows("SELECT region_id, value, signal FROM evidence WHERE kernel = 'k'")
    assert got == [{"region_id": "proton_probe/k", "value": 12576.0, "signal": "duration"}]
    launch = store.rows("SELECT region_id, host_op, launch_api FROM kernel_launch "
                        "WHERE region_id IS NOT NULL")
    assert launch == [{"region_id": "proton_probe/k", "host_op": None,
                       "launch_api": "cuLaunchKernelEx"}]
    run = store.rows("SELECT device, export_schema, torch_profiler, activity_tracing, timing_clean"
                     " FROM run")[0]
    # the trace has host ops (torch.profiler's CPU activity): its timing is not clean
    assert run == {"device": "NVIDIA H200", "export_schema": "1", "torch_profiler": True,
                   "activity_tracing": True, "timing_clean": False}


def test_small_batches_give_the_same_rows() -> None:
    whole = tables(read(SIMPLE_ADD))
    art = KinetoTraceReader(batch_rows=7).read(SIMPLE_ADD)
    batches = list(art.batches())
    assert max(b.num_rows for _, b in batches) <= 7
    assert tables(art)["kernel_launch"].equals(whole["kernel_launch"])


def test_truncated_gzip_is_a_clear_error_and_writes_nothing(tmp_path: Path,
                                                          store: Store) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(SIMPLE_ADD.read_bytes()[:15_000])
    err = refused(store, cut)
    assert str(cut) in str(err) and "truncated" in str(err)


def test_truncated_json_is_a_clear_error_and_writes_nothing(tmp_path: Path,
                                                          store: Store) -> None:
    cut = tmp_path / "cut.json"
    text = gzip.decompress(SIMPLE_ADD.read_bytes())
    cut.write_bytes(text[: len(text) * 2 // 3])
    err = refused(store, cut)
    assert err.path == str(cut) and "ends early" in err.problem
    assert "export the trace again" in err.fix


def test_trace_without_gpu_events_is_refused(tmp_path: Path, store: Store) -> None:
    cpu = tmp_path / "cpu.json"
    cpu.write_text('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", '
                   '"name": "aten::add", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2}]}')
    refused(store, cpu, r"ProfilerActivity\.CUDA")


def test_innermost_enclosing_cpu_op_on_the_same_thread() -> None:
    ix = LaunchIndex()
    ix.add_cpu_op(1, 10, 0, 1000, "aten::linear")
    ix.add_cpu_op(1, 10, 100, 400, "aten::addmm")        # inner op: wins for calls inside it
    ix.add_cpu_op(1, 11, 0, 1000, "other_thread_op")
    ix.add_runtime(1, 10, 200, 7, "cudaLaunchKernel")    # inside addmm
    ix.add_runtime(1, 10, 600, 8, "cudaLaunchKernel", dur_ns=5, src_row=4)  # in linear only
    ix.add_runtime(1, 10, 5000, 9, "cudaMemcpyAsync")    # inside nothing
    found = ix.resolve().lookup([8, 7, 9, 42, None])
    assert found.host_op == ["aten::linear", "aten::addmm", None, None, None]
    assert found.launch_api == ["cudaLaunchKernel", "cudaLaunchKernel", "cudaMemcpyAsync", None,
                                None]
    # the call itself: its time, duration, process, thread and traceEvents index
    assert found.api_start_ns == [600, 200, 5000, None, None]
    assert found.api_dur_ns[0] == 5 and found.api_src_row[0] == 4
    assert found.api_pid[:3] == [1, 1, 1] and found.api_tid[:3] == [10, 10, 10]


def test_microseconds_to_exact_nanoseconds() -> None:
    assert us_to_ns(Decimal("1694039994139246")) == 1694039994139246000
    assert us_to_ns(Decimal("2413669097444.592")) == 2413669097444592
    assert us_to_ns(Decimal("0.0005")) == 0 and us_to_ns(Decimal("0.0015")) == 2  # half-even
    assert us_to_ns(3) == 3000 and us_to_ns(None) is None


def test_gzip_cut_inside_its_first_block_is_reported_as_truncated(tmp_path: Path,
                                                                  store: Store) -> None:
    cut = tmp_path / "tiny.json.gz"
    cut.write_bytes(TRITON.read_bytes()[:300])
    refused(store, cut, "gzip stream ends early")


@pytest.mark.parametrize("path", [TRITON, SIMPLE_ADD, DATA / "gpu" / "xlayer" /
                                  "xl-overlap-profiler-1" /
                                  "tp_block.overlap.profiler.r1.rank0.kineto.json.gz"],
                         ids=["triton", "pytorch2.1", "h200-rank0"])
def test_the_launching_call_is_stored_with_its_time_thread_and_event(path: Path) -> None:
    # Oracle: the trace read whole with json, independently of the streaming reader.
    import json

    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    calls = {e["args"]["correlation"]: (i, e) for i, e in enumerate(events)
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"}
    # Kineto's own flow starts ('ac2g', ph 's') sit at the launching call's ts
    flow_start = {e["id"]: e["ts"] for e in events if e.get("cat") == "ac2g"
                  and e.get("ph") == "s"}
    rows = tables(read(path))["kernel_launch"].to_pylist()
    assert rows and all(r["api_start_ns"] is not None for r in rows)
    for r in rows:
        i, call = calls[r["correlation_id"]]
        assert r["api_src_row"] == i and events[i]["name"] == r["launch_api"]
        assert r["api_start_ns"] == us_to_ns(Decimal(str(call["ts"])))
        assert r["api_dur_ns"] == us_to_ns(Decimal(str(call["dur"])))
        assert (r["api_pid"], r["api_tid"]) == (call["pid"], call["tid"])
        if r["correlation_id"] in flow_start:
            assert r["api_start_ns"] == us_to_ns(Decimal(str(flow_start[r["correlation_id"]])))
