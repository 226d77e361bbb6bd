"""Exports load in their target tools: Chrome trace rules, llnl-hatchet, pyarrow.

Perfetto's Python trace processor downloads its binary at run time (no network here), so the
Chrome trace is validated against the trace event format's rules instead
(:mod:`tests.answers.chrome_trace`), flow binding included; where a ``trace_processor_shell``
is at hand (``ARGUS_TRACE_PROCESSOR``), Perfetto itself reads the export back too.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hatchet import GraphFrame

import argusdb
from argusdb.answers.select import resolve_version
from argusdb.api import Connection
from argusdb.cli import main
from argusdb.errors import QueryRefused
from argusdb.store import open_store
from tests.answers.chrome_trace import bind_flows, check_chrome_trace
from tests.answers.conftest import MATMUL_TRACE
from tests.conftest import DATA

REGION = "matmul/matmul_kernel"


def _recorded_launches() -> list[dict]:
    recs = [json.loads(x) for x in MATMUL_TRACE.read_text().splitlines()]
    return [r for r in recs if r["kind"] in ("KERNEL", "CONCURRENT_KERNEL")]


def _recorded_calls() -> list[dict]:
    """The recording's runtime calls that launched one of its kernels."""
    recs = [json.loads(x) for x in MATMUL_TRACE.read_text().splitlines()]
    kernels = {r["correlation_id"] for r in recs if r["kind"] == "CONCURRENT_KERNEL"}
    return [r for r in recs if r["kind"] == "RUNTIME" and r["correlation_id"] in kernels]



def _export(*args: str) -> None:
    """``argus export ARGS...``, which must succeed."""
    r = CliRunner().invoke(main, ["export", *args])
    assert r.exit_code == 0, r.output

def test_perfetto_trace_of_a_run(relabelled: Connection, tmp_path: Path) -> None:
    ref = resolve_version(relabelled, "variant=a", REGION)
    run = relabelled.query(f"SELECT run_id FROM run WHERE program_version = "
                           f"'{ref.program_version}'").to_pylist()[0]["run_id"]
    path, out = relabelled.store.path, tmp_path / "run.json"
    relabelled.close()
    _export(path, "--run", run[:8], "--format", "perfetto", str(out))
    doc = json.loads(out.read_text())
    events = [e for e in check_chrome_trace(doc) if e["cat"] == "kernel"]
    rec, calls = _recorded_launches(), _recorded_calls()
    assert len(events) == len(rec) == 33 and len(calls) == 13
    # from the run's first event: a kernel or the runtime call that launched one
    t0 = min(x["start"] for x in rec + calls)
    first = min(rec, key=lambda x: x["start"])
    ev = events[0]
    assert ev["name"] == first["name"] and ev["ts"] == (first["start"] - t0) / 1000.0
    assert ev["dur"] == (first["end"] - first["start"]) / 1000.0
    # the 13 kernels launched by a recorded runtime call have their flow from it
    assert len(bind_flows(doc)) == 13
    mm = [e for e in events if e["name"] == "matmul_kernel"]
    assert len(mm) == 20 and {e["args"]["region_id"] for e in mm} == {REGION}
    last = max(rec, key=lambda x: x["start"])
    assert events[-1]["ts"] == (last["start"] - t0) / 1000.0


def test_hatchet_tree_loads_in_llnl_hatchet(relabelled: Connection, tmp_path: Path) -> None:
    path, out = relabelled.store.path, tmp_path / "tree.json"
    relabelled.close()
    _export(path, str(out), "--format", "hatchet", "--version", "variant=a", "--program", "matmul")
    gf = GraphFrame.from_literal(json.loads(out.read_text()))
    df = gf.dataframe.reset_index()
    assert sorted(df["name"]) == ["_entry", "epilogue", "mainloop", "matmul", "matmul_kernel"]
    kernel = df[df["name"] == "matmul_kernel"].iloc[0]
    assert kernel["duration (ns)"] == 210814.5  # median launch of the recording
    # cupti times whole kernels: sub-regions have no duration evidence (NaN, not 0)
    assert math.isnan(df[df["name"] == "mainloop"].iloc[0]["duration (ns)"])
    root = gf.graph.roots[0]
    assert root.frame["type"] == "program" and len(root.children) == 1
    assert sorted(c.frame["name"] for c in root.children[0].children) == [
        "_entry", "epilogue", "mainloop"]


def test_parquet_of_a_checked_query(relabelled: Connection, tmp_path: Path) -> None:
    path, out = relabelled.store.path, tmp_path / "q.parquet"
    sql = ("SELECT launch, value FROM evidence WHERE region_id = 'matmul/matmul_kernel' AND "
           "program_version = (SELECT min(program_version) FROM program_version "
           "WHERE program = 'matmul') ORDER BY value")
    relabelled.close()
    _export(path, str(out), "--format", "parquet", "--query", sql)
    t = pq.read_table(out)
    assert t.column_names == ["launch", "value"] and t.num_rows == 20
    durs = sorted(float(x["end"] - x["start"]) for x in _recorded_launches()
                  if x["name"] == "matmul_kernel")
    assert t.column("value").to_pylist() == durs


def test_parquet_refused_query_writes_nothing(relabelled: Connection, tmp_path: Path) -> None:
    from argusdb.answers.export import parquet

    with pytest.raises(QueryRefused) as exc:
        parquet(relabelled, "SELECT median(value) FROM evidence WHERE region_id = "
                "'matmul/matmul_kernel'", tmp_path / "x.parquet")
    assert exc.value.findings[0].code == "AR01"  # three versions of matmul as if one
    assert not (tmp_path / "x.parquet").exists()


def test_perfetto_trace_places_proton_scopes_per_cta_and_warp(tmp_path: Path) -> None:
    gpu = DATA / "gpu"
    trace = gpu / "softmax.default.instr.chrome_trace.gz"
    src = tmp_path / "softmax.py"  # the instrumented variant, under its program's name
    src.write_text((gpu / "variants" / "softmax.default.proton_scopes.py").read_text())
    db = argusdb.connect(tmp_path / "s.duckdb", create=True)
    run = db.ingest(trace, src).run_id
    path, out = db.store.path, tmp_path / "scopes.json"
    db.close()
    _export(path, "--run", run[:8], "--format", "perfetto", str(out))
    doc = json.loads(out.read_text())
    events = check_chrome_trace(doc)  # an instrumentation run has no kernel launches
    with gzip.open(trace, "rt") as fh:
        recorded = [e for e in json.load(fh)["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(recorded) == 6144
    names = {(m["pid"], m["tid"]) if m["name"] == "thread_name" else m["pid"]: m["args"]["name"]
             for m in doc["traceEvents"] if m["ph"] == "M"}
    # every recorded event is there, on its CTA's process and its warp's thread, same ts/dur
    got = sorted((names[e["pid"]], names[(e["pid"], e["tid"])], e["name"], e["ts"], e["dur"])
                 for e in events)
    want = sorted((e["pid"], e["tid"].split(" (")[0], e["name"], e["ts"], e["dur"])
                  for e in recorded)
    assert got == want
    # traceEvents[2]: 'store' of softmax_fwd Core0 CTA8 warp 0, ts 2.05 µs, dur 0.095 µs
    ev = next(e for e in events if e["args"]["src_row"] == 2)
    assert (names[ev["pid"]], ev["tid"], ev["name"]) == ("softmax_fwd Core0 CTA8", 0, "store")
    assert (ev["ts"], ev["dur"], ev["args"]["cycles"]) == (2.05, 0.095, 95.0)
    assert ev["args"]["region_id"] == "softmax/softmax_fwd/store"
    assert {e["args"]["region_id"] for e in events} == {
        f"softmax/softmax_fwd/{s}" for s in ("load", "reduce", "store")}


def test_hatchet_children_sum_to_the_kernel_with_unattributed(tmp_path: Path) -> None:
    """Layer norm's source page without call sites (library code unplaced): the kernel's
    attributed children, _unattributed included, add up to its observed total; one metric
    name per signal on every level; no '(None)' unit."""
    ln = DATA / "attribution"
    path = tmp_path / "ln.duckdb"
    with argusdb.connect(path, create=True) as db:
        db.ingest(ln / "layernorm.source.csv", ln / "kernels" / "layernorm.py",
                  {"variant": "csv", "target": "sm_90"})
    out = tmp_path / "tree.json"
    _export(str(path), str(out), "--format", "hatchet", "--version", "variant=csv")
    doc = json.loads(out.read_text())
    gf = GraphFrame.from_literal(doc)
    df = gf.dataframe.reset_index()
    assert "_unattributed" in set(df["name"])
    kernel = doc[0]["children"][0]
    kids = kernel["children"]
    inst = next(m for m in kernel["metrics"] if m.startswith("inst_executed"))
    for sig in (inst, "warp_stall_samples (samples)"):
        total = kernel["metrics"][sig]
        assert sum(c["metrics"].get(sig, 0) for c in kids) == pytest.approx(total)
    with argusdb.connect(path, read_only=True) as db:  # the source page's own total
        (observed,) = db.store.rows("SELECT sum(value) AS v FROM evidence WHERE signal = "
                                    "'inst_executed' AND evidence_class = 'observed'")
    assert kernel["metrics"][inst] == observed["v"] == 9961472
    unattributed = next(c for c in kids if c["frame"]["name"] == "_unattributed")
    assert unattributed["metrics"][inst] == 4259840
    names: dict[str, set[str]] = {}

    def walk(n: dict) -> None:
        for m in n["metrics"]:
            names.setdefault(m.split(" (", 1)[0], set()).add(m)
            assert "(None)" not in m
        for c in n["children"]:
            walk(c)

    walk(doc[0])
    assert all(len(v) == 1 for v in names.values()), names


def test_perfetto_trace_of_several_runs_with_host_ops(tmp_path: Path) -> None:
    """Both ranks of a distributed Kineto recording on the H200 (torch.profiler): each run is
    its own group of processes, its kernels on device tracks and its torch ops, annotations
    and steps on host-thread tracks, each from its own first event."""
    from argusdb.ingest.ranks import ingest_launch

    path = tmp_path / "xl.duckdb"
    with open_store(path, create=True) as st:
        ingest_launch(st, DATA / "gpu" / "xlayer" / "xl-overlap-profiler-1")
        runs = [r["run_id"] for r in st.rows("SELECT run_id FROM run ORDER BY run_id")]
        want = {r["run_id"]: (r["k"], r["h"]) for r in st.rows(
            "SELECT run_id, (SELECT count(*) FROM kernel_launch k WHERE k.run_id = r.run_id) "
            "AS k, (SELECT count(*) FROM trace_span s WHERE s.run_id = r.run_id AND "
            "s.clock = 'host') AS h FROM run r")}
    assert len(runs) == 2 and all(k > 0 and h > 0 for k, h in want.values())
    out = tmp_path / "two.json"
    _export(str(path), str(out), "--format", "perfetto", "--run", runs[0][:8], "--run", runs[1][:8])
    doc = json.loads(out.read_text())
    events = check_chrome_trace(doc)
    assert [x["run_id"] for x in doc["otherData"]["argusdb_runs"]] == runs
    procs = {m["pid"]: m["args"]["name"] for m in doc["traceEvents"]
             if m["name"] == "process_name"}
    for run in runs:
        mine = [e for e in events if e["args"]["run_id"] == run]
        kernels = [e for e in mine if e["cat"] == "kernel"]
        host = [e for e in mine if e["cat"] in ("host_op", "annotation", "step")]
        assert (len(kernels), len(host)) == want[run]
        assert min(e["ts"] for e in mine) == 0.0  # each run from its own first event
        # a run's processes are its own, and say which run they belong to
        assert {procs[e["pid"]].split(" ")[1] for e in mine} == {run[:8]}
        assert {e["pid"] for e in kernels}.isdisjoint({e["pid"] for e in host})
    mm = [e for e in events if e["cat"] == "kernel" and e["args"]["host_op"] == "aten::mm"]
    assert mm and all(e["args"]["launch_api"] for e in mm)
