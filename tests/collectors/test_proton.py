"""Proton outputs recorded on an H200 with Triton 3.6.0 (tests/data/proton/recipe.sh)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from argusdb.collectors import detect
from argusdb.collectors.base import EVIDENCE_SCHEMA, KERNEL_LAUNCH_SCHEMA, Artefact
from argusdb.collectors.proton import HatchetReader, ProtonInstrTraceReader, ProtonTraceReader
from argusdb.collectors.proton.hatchet import metric_signal
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.collectors.batches import tables
from tests.collectors.refusal import refused
from tests.conftest import DATA

PROTON = DATA / "proton"
PROBE = ProgramSource.from_path(PROTON / "proton_probe.py")


def evidence(name: str) -> tuple[Artefact, list[dict[str, object]]]:
    path = PROTON / name
    art = detect(path).read(path)
    ev = tables(art)["evidence"]
    assert ev.schema == EVIDENCE_SCHEMA
    return art, ev.to_pylist()


def test_scope_tree_gives_kernel_time_per_scope() -> None:
    assert isinstance(detect(PROTON / "tree.hatchet"), HatchetReader)
    art, ev = evidence("tree.hatchet")
    assert art.kind == "proton.hatchet" and art.target == "sm_90"
    assert art.interference.signature() == "activity_tracing"
    assert art.device["devices"][0]["num_sms"] == 132
    k = {(r["scope_path"], r["signal"]): r["value"] for r in ev if r["kernel"] == "k"}
    assert k == {("it0/k", "launch_count"): 1.0, ("it0/k", "duration_sum"): 11232.0,
                 ("it1/k", "launch_count"): 1.0, ("it1/k", "duration_sum"): 12160.0,
                 ("it2/k", "launch_count"): 1.0, ("it2/k", "duration_sum"): 11775.0}
    assert {r["launch"] for r in ev} == {"all"}
    assert len(ev) == 24 and len(art.kernels) == 4


def test_pc_sampling_tree_gives_stall_reasons() -> None:
    art, ev = evidence("pcs.hatchet")
    assert art.kind == "proton.pcsampling" and art.interference.pc_sampling
    assert not art.interference.timing_clean()
    v = {r["signal"]: r["value"] for r in ev}
    assert v["stall_long_scoreboard"] == 37638 and v["stall_not_selected"] == 0
    assert v["pc_samples"] == 98161 and v["pc_stalled_samples"] == 50802
    assert v["launch_count"] == 20 and v["duration_sum"] == 254977
    assert {r["unit"] for r in ev if str(r["signal"]).startswith("stall_")} == {"samples"}
    assert {r["scope_path"] for r in ev} == {"p/k"}


def test_pc_sampling_line_frames_give_file_and_line(tmp_path: Path) -> None:
    # The recording has no line nodes (its cubin had no line table); Proton names them
    # '<dir>/<file>:<line>@<function>' (Utility/String.h formatFileLineFunction). Add one
    # under the real kernel node, with its samples, to check the parsing.
    tree, devices = json.loads((PROTON / "pcs.hatchet").read_text())
    kernel = tree["children"][0]["children"][0]
    kernel["children"] = [{"children": [], "frame": {"name": "/tmp/x/proton_probe.py:7@k",
                                                     "type": "line"},
                           "metrics": {"num_samples": 90, "stalled_long_scoreboard": 60}}]
    path = tmp_path / "lines.hatchet"
    path.write_text(json.dumps([tree, devices]))
    ev = tables(detect(path).read(path))["evidence"].to_pylist()
    line = [r for r in ev if r["source_line"] is not None]
    assert [(r["kernel"], r["source_file"], r["source_line"], r["signal"], r["value"],
             r["scope_path"]) for r in line] == [
        ("k", "proton_probe.py", 7, "pc_samples", 90.0, "p/k/proton_probe.py:7@k"),
        ("k", "proton_probe.py", 7, "stall_long_scoreboard", 60.0, "p/k/proton_probe.py:7@k")]


def test_instrumentation_tree_gives_cycles_per_scope() -> None:
    art, ev = evidence("instr_tree.hatchet")
    assert art.kind == "proton.instr_hatchet" and art.interference.instrumentation
    got = {(r["kernel"], r["scope_path"], r["signal"]): (r["value"], r["unit"]) for r in ev}
    assert got == {
        ("k2", "k2/load", "scope_cycles"): (24690.0, "cycles"),
        ("k2", "k2/load", "scope_cycles_normalized"): (96.4453125, "cycles"),
        ("k2", "k2/store", "scope_cycles"): (248604.0, "cycles"),
        ("k2", "k2/store", "scope_cycles_normalized"): (971.109375, "cycles")}


def test_kernel_timeline_trace() -> None:
    path = PROTON / "trace.chrome_trace"
    reader = detect(path)
    assert isinstance(reader, ProtonTraceReader)
    art = reader.read(path)
    t = tables(art)
    assert t["kernel_launch"].schema == KERNEL_LAUNCH_SCHEMA
    rows = t["kernel_launch"].to_pylist()
    assert len(rows) == 5
    assert (rows[0]["kernel"], rows[0]["start_ns"], rows[0]["dur_ns"]) == ("k", 0, 11392)
    # ts 43668.489 µs, dur 2.048 µs in the file
    assert (rows[1]["start_ns"], rows[1]["dur_ns"], rows[1]["launch"]) == (43668489, 2048, 0)
    assert (rows[2]["dur_ns"], rows[2]["launch"]) == (1920, 1)
    ev = t["evidence"].to_pylist()
    assert ev[0]["scope_path"] == "s/k" and ev[0]["value"] == 11392.0


def test_instrumentation_trace_gives_cycles_per_cta_and_warp() -> None:
    path = PROTON / "instr_trace.chrome_trace"
    reader = detect(path)
    assert isinstance(reader, ProtonInstrTraceReader)
    art = reader.read(path)
    assert art.interference.signature() == "instrumentation"
    assert art.meta["ctas_recorded"] == 64 and art.meta["frequency_mhz"] == ["1000.0"]
    ev = tables(art)["evidence"].to_pylist()
    assert len(ev) == 512
    assert Counter(r["scope_path"] for r in ev) == {"k2/load": 256, "k2/store": 256}
    assert {r["unit"] for r in ev} == {"cycles"} and {r["warp"] for r in ev} == {"0", "1", "2",
                                                                                  "3"}
    first = ev[0]  # pid 'k2 Core0 CTA8', tid 'warp 0 (line 0)', dur 0.095 µs at 1000 MHz
    assert (first["sm"], first["cta"], first["warp"], first["value"]) == ("0", "8", "0", 95.0)
    assert (ev[1]["scope_path"], ev[1]["value"]) == ("k2/store", 1169.0)
    load = sum(float(r["value"]) for r in ev if r["scope_path"] == "k2/load")
    assert load == 24466.0  # the tree (instr_tree.hatchet) states 24690 for the same scope


def test_instrumentation_trace_gives_scope_events_with_start_times() -> None:
    path = DATA / "gpu" / "softmax.default.instr.chrome_trace.gz"
    with gzip.open(path, "rt") as fh:
        n_x = sum(e.get("ph") == "X" for e in json.load(fh)["traceEvents"])
    t = tables(ProtonInstrTraceReader().read(path))  # 6144 events: two batches of <= 4096
    spans, ev = t["scope_event"].to_pylist(), t["evidence"].to_pylist()
    assert len(spans) == len(ev) == n_x == 6144
    assert [s["src_row"] for s in spans] == [e["src_row"] for e in ev]
    assert [s["cycles"] for s in spans] == [e["value"] for e in ev]
    # traceEvents[2]: 'store', pid 'softmax_fwd Core0 CTA8', tid 'warp 0', ts 2.05, dur 0.095 µs
    third = spans[2]
    assert (third["scope"], third["scope_path"], third["sm"], third["cta"], third["warp"]) == (
        "store", "softmax_fwd/store", "0", "8", "0")
    assert (third["start_ns"], third["dur_ns"], third["cycles"]) == (2050, 95, 95.0)
    # traceEvents[6143]: pid 'softmax_fwd Core131 CTA403', tid 'warp 3', ts 2.301, dur 0.114 µs
    last = spans[-1]
    assert (last["sm"], last["cta"], last["warp"], last["start_ns"], last["dur_ns"]) == (
        "131", "403", "3", 2301, 114)


def test_ingest_binds_proton_kernel_rows_to_regions(store: Store) -> None:
    res = ingest_path(store, PROTON / "tree.hatchet", program=PROBE)
    # k's 6 rows; the cuBLAS and torch RNG kernels' 18 are a timeline run of their own version.
    assert res.rows == {"evidence": 6}
    assert res.other is not None and res.other["rows"] == {"evidence": 18}
    got = store.rows("SELECT scope_path, value FROM evidence WHERE region_id = 'proton_probe/k' "
                     "AND signal = 'duration_sum' ORDER BY scope_path")
    assert [(r["scope_path"], r["value"]) for r in got] == [
        ("it0/k", 11232.0), ("it1/k", 12160.0), ("it2/k", 11775.0)]
    res = ingest_path(store, PROTON / "instr_trace.chrome_trace", program=PROBE)
    assert res.rows == {"evidence": 512, "scope_event": 512}
    # Scopes inside the kernel are not the kernel: their rows wait for attribution.
    regions = store.rows("SELECT DISTINCT region_id FROM evidence WHERE signal = 'scope_cycles' "
                         "AND evidence_class = 'observed'")
    assert regions == [{"region_id": None}]
    run = store.rows("SELECT signature, timing_clean FROM run WHERE kind = 'proton.instr_trace'")
    assert run == [{"signature": "instrumentation", "timing_clean": False}]


def test_metric_names() -> None:
    assert metric_signal("flops16 (flop/s)") == ("flops16", "flop/s")
    assert metric_signal("time (ns)") == ("duration_sum", "ns")


@pytest.mark.parametrize("name", ["tree.hatchet", "instr_trace.chrome_trace",
                                  "trace.chrome_trace"])
def test_truncated_files_are_clear_errors(name: str, tmp_path: Path, store: Store) -> None:
    cut = tmp_path / name
    data = (PROTON / name).read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    err = refused(store, cut)
    assert err.path == str(cut) and "ends early" in err.problem


def test_hatchet_without_root(tmp_path: Path, store: Store) -> None:
    bad = tmp_path / "bad.hatchet"
    bad.write_text('[{"children": [], "metrics": {}}]')
    refused(store, bad, "no root frame")
