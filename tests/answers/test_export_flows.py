"""Flow arrows from the launching call to its kernel in the Perfetto export, on recordings of
three collectors: torch.profiler (Kineto, both ranks of an H200 launch), Nsight Systems
(SQLite export) and cupti-python activity records (H200)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from argusdb.answers.export import perfetto_trace
from argusdb.api import connect
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from tests.answers.chrome_trace import bind_flows, check_chrome_trace
from tests.conftest import DATA

XL = DATA / "gpu" / "xlayer" / "xl-overlap-profiler-1"
NSYS = DATA / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"
CUPTI = DATA / "gpu" / "programs" / "model" / "cupti_timing.parent" / "timing.638.cupti.jsonl"
TRITON = DATA / "kineto" / "triton_example.json.gz"


def _store(tmp: Path, what: str) -> tuple[Path, list[str]]:
    """A store holding the recording ``what``; the runs to export (timeline runs left out:
    the export of a program's run includes them)."""
    path = tmp / f"{what}.duckdb"
    with open_store(path, create=True) as st:
        if what == "kineto-2-ranks":
            from argusdb.ingest.ranks import ingest_launch

            ingest_launch(st, XL)
        else:
            ingest_path(st, {"nsys": NSYS, "cupti": CUPTI, "kineto-triton": TRITON}[what])
        runs = [r["run_id"] for r in st.rows(
            "SELECT run_id FROM run WHERE meta->>'$.timeline_of.run_id' IS NULL "
            "ORDER BY run_id")]
    return path, runs


def _stored_calls(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """(run, correlation) → the stored launching call of each kernel that has one."""
    with open_store(path, read_only=True) as st:
        rows = st.rows("SELECT run_id, kernel, correlation_id, launch_api, api_start_ns, "
                       "api_dur_ns, api_pid, api_tid FROM kernel_launch "
                       "WHERE api_start_ns IS NOT NULL")
    keyed = {(r["run_id"], r["correlation_id"]): r for r in rows}
    assert len(keyed) == len(rows)  # one kernel per call in these recordings
    return keyed


@pytest.mark.parametrize("what", ["kineto-2-ranks", "nsys", "cupti", "kineto-triton"])
def test_every_kernel_with_a_stored_launch_gets_one_flow_from_its_call(
        what: str, tmp_path: Path) -> None:
    path, runs = _store(tmp_path, what)
    calls = _stored_calls(path)
    with connect(path, read_only=True) as db:
        doc = perfetto_trace(db, runs)
    slices = check_chrome_trace(doc)
    procs = {m["pid"]: m["args"]["name"] for m in doc["traceEvents"]
             if m["name"] == "process_name"}
    threads = {(m["pid"], m["tid"]): m["args"]["name"] for m in doc["traceEvents"]
               if m["name"] == "thread_name"}
    kernels = [e for e in slices if e["cat"] == "kernel"]
    flows = bind_flows(doc)
    assert calls and len(flows) == len(calls)
    # exactly one flow ends on each kernel with a stored call; none on the others
    ended = Counter(id(k) for _, k in flows)
    for e in kernels:
        assert ended[id(e)] == (1 if _call_of(e, calls) is not None else 0), e
    for src, dst in flows:
        assert dst["cat"] == "kernel" and src["cat"] in ("cuda_runtime", "cuda_driver")
        call = _call_of(dst, calls)
        assert call is not None and call["kernel"] == dst["name"]
        # the start slice is that kernel's own call: name, time, duration, process, thread
        assert src["args"]["correlation"] == dst["args"]["correlation"]
        assert (src["name"], src["args"]["start_ns"], src["args"]["dur_ns"]) == (
            call["launch_api"], call["api_start_ns"], call["api_dur_ns"])
        assert threads[(src["pid"], src["tid"])] == f"thread:{call['api_tid']}"
        assert procs[src["pid"]].endswith(f"host pid {call['api_pid']}")
    # both ends strictly inside their slices wherever these last 2 ns or more
    ends = {(e["id"], e["ph"]): e for e in doc["traceEvents"] if e["ph"] in ("s", "f")}
    for fid in {i for i, _ in ends}:
        s, f = ends[(fid, "s")], ends[(fid, "f")]
        for ev in (s, f):
            owner = next(x for x in slices if (x["pid"], x["tid"]) == (ev["pid"], ev["tid"])
                         and x["ts"] <= ev["ts"] <= x["ts"] + x["dur"])
            if owner["args"]["dur_ns"] >= 2:
                assert owner["ts"] < ev["ts"] < owner["ts"] + owner["dur"]


def _call_of(kernel: dict[str, Any], calls: dict[tuple[str, int], dict[str, Any]]
             ) -> dict[str, Any] | None:
    """The stored call of an exported kernel."""
    return calls.get((kernel["args"]["run_id"], kernel["args"]["correlation"]))


#: A trace_processor_shell binary, where one is at hand: the ``perfetto`` package downloads it
#: from Google storage at run time, which this test machine cannot reach (see the README).
SHELL = os.environ.get("ARGUS_TRACE_PROCESSOR")


@pytest.mark.skipif(not SHELL or not Path(SHELL).is_file(),
                    reason="no trace_processor_shell (set ARGUS_TRACE_PROCESSOR to one; the "
                    "perfetto package's own download needs commondatastorage.googleapis.com)")
def test_perfettos_trace_processor_reads_the_flows_back(tmp_path: Path) -> None:
    pytest.importorskip("perfetto")
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    path, runs = _store(tmp_path, "kineto-2-ranks")
    with connect(path, read_only=True) as db:
        doc = perfetto_trace(db, runs)
    out = tmp_path / "flows.json"
    out.write_text(json.dumps(doc))
    tp = TraceProcessor(trace=str(out), config=TraceProcessorConfig(bin_path=SHELL))
    try:
        slices = next(iter(tp.query("SELECT count(*) AS n FROM slice"))).n
        linked = next(iter(tp.query(
            "SELECT count(*) AS n FROM flow AS f JOIN slice AS a ON a.id = f.slice_out "
            "JOIN slice AS b ON b.id = f.slice_in WHERE a.category IN ('cuda_runtime', "
            "'cuda_driver') AND b.category = 'kernel'"))).n
    finally:
        tp.close()
    assert slices == len(check_chrome_trace(doc))
    assert linked == len(_stored_calls(path))


def test_the_export_reads_back_with_its_calls_through_the_kineto_collector(
        tmp_path: Path) -> None:
    """An Nsight Systems export, exported as Chrome trace JSON and read by the kineto collector
    (a reader of torch.profiler's traces): every kernel comes back with its launching call,
    the call's name, duration and lead over its kernel exact to the ns."""
    from argusdb.collectors import detect

    path, runs = _store(tmp_path, "nsys")
    with connect(path, read_only=True) as db:
        doc = perfetto_trace(db, runs)
    out = tmp_path / "nsys.json"
    out.write_text(json.dumps(doc))
    art = detect(out).read(out)
    back = [r for t, b in art.batches() if t == "kernel_launch" for r in b.to_pylist()]
    stored = sorted(_stored_calls(path).values(), key=lambda r: r["correlation_id"])
    with open_store(path, read_only=True) as st:
        starts = {r["correlation_id"]: r["start_ns"] for r in st.rows(
            "SELECT correlation_id, start_ns FROM kernel_launch")}
    assert len(back) == len(stored) == 1312
    got = sorted((r["correlation_id"], r["launch_api"], r["api_dur_ns"],
                   r["start_ns"] - r["api_start_ns"]) for r in back)
    want = [(r["correlation_id"], r["launch_api"], r["api_dur_ns"],
             starts[r["correlation_id"]] - r["api_start_ns"]) for r in stored]
    assert got == want


def test_launch_trace_of_both_ranks_draws_each_call_to_its_kernel(tmp_path: Path) -> None:
    """The per-rank timeline of a launch group (``argus launch trace``): every kernel whose
    launching call is stored gets one flow from that call, on its own rank, both ends on the
    reference clock like every other slice."""
    from argusdb.answers.ranks import launch_trace

    path, _ = _store(tmp_path, "kineto-2-ranks")
    with open_store(path, read_only=True) as st:
        (group,) = [r["launch_group"] for r in st.rows(
            "SELECT DISTINCT launch_group FROM run WHERE launch_group IS NOT NULL")]
        stored = st.rows(
            "SELECT r.rank, k.kernel, k.correlation_id, k.launch_api, k.api_dur_ns "
            "FROM kernel_launch AS k JOIN run AS r USING (run_id) "
            "WHERE k.api_start_ns IS NOT NULL")
        doc = launch_trace(st, group)
    slices = check_chrome_trace(doc)
    # the slices of one thread nest (a viewer draws them as a stack): no partial overlaps
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in slices:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends: list[float] = []
        for e in evs:
            while open_ends and open_ends[-1] <= e["ts"]:
                open_ends.pop()
            assert not open_ends or e["ts"] + e["dur"] <= open_ends[-1] + 1e-3, e
            open_ends.append(e["ts"] + e["dur"])
    flows = bind_flows(doc)
    assert stored and len(flows) == len(stored) == doc["otherData"]["flows"]
    by_call = {(int(r["rank"]), r["correlation_id"]): r for r in stored}
    ended = Counter(id(dst) for _, dst in flows)
    assert set(ended.values()) == {1}  # no kernel gets two
    for src, dst in flows:
        assert src["pid"] == dst["pid"]  # the call and its kernel on one rank
        call = by_call[(src["pid"], src["args"]["correlation"])]
        assert dst["cat"] == "kernel,compute" or dst["cat"] == "kernel,communication"
        assert dst["name"] == call["kernel"] and src["name"] == call["launch_api"]
        assert src["args"]["dur_ns"] == call["api_dur_ns"]
        assert src["ts"] <= dst["ts"]  # a kernel never starts before its call
