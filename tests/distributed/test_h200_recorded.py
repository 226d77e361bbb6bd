"""The 2-H200 recording (tests/data/gpu/xlayer, tools/h200/xlayer/run.sh): two versions of a
tensor-parallel block, ingested per launch; figures checked against the raw spans files."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest

from argusdb.answers.ranks import collective_diff, launch_trace
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest.ranks import ingest_launch
from argusdb.store import open_store
from argusdb.store.embedded import Store

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "gpu" / "xlayer"
PROGRAM = ROOT / "tools" / "h200" / "xlayer" / "tp_block.py"
LAUNCHES = ("xl-serial-events-1", "xl-serial-events-2", "xl-serial-events-3",
            "xl-overlap-events-1", "xl-overlap-events-2", "xl-overlap-events-3",
            "xl-serial-forced-1", "xl-overlap-forced-1",
            "xl-overlap-cupti-1", "xl-overlap-profiler-1")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    st = open_store(tmp_path_factory.mktemp("xl") / "s.duckdb", create=True)
    prog = ProgramSource.from_path(PROGRAM)
    for name in LAUNCHES:
        v = name.split("-")[1]
        ingest_launch(st, DATA / name, program=prog, options={"version": v, "target": "sm_90"})
    yield st
    st.close()


def _versions(st: Store) -> dict[str, str]:
    return {r["v"]: r["pv"] for r in st.rows(
        "SELECT DISTINCT options->>'$.version' AS v, program_version AS pv FROM program_version")}


def test_signatures_say_which_runs_are_clean(store: Store) -> None:
    got = {(r["kind"], r["mode"]): (r["timing_clean"], r["signature"]) for r in store.rows(
        "SELECT DISTINCT kind, coalesce(meta->>'$.mode', "
        "CASE WHEN torch_profiler THEN 'profiler' ELSE 'cupti' END) AS mode, timing_clean, "
        "signature FROM run")}
    assert got == {("torchdist.spans_jsonl", "events"): (True, "none"),
                   ("torchdist.spans_jsonl", "forced"): (False, "forced_wait"),
                   ("kineto.trace", "cupti"): (True, "activity_tracing"),
                   ("kineto.trace", "profiler"): (False, "torch_profiler+activity_tracing")}


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _exposed_oracle(path: Path) -> list[int]:
    """Exposed communication per step (steps >= 1) recomputed from the raw spans file."""
    recs = [json.loads(x) for x in gzip.open(path, "rt").read().splitlines()[1:]]
    out = []
    for s in (r for r in recs if r["role"] == "step" and r["step"] >= 1):
        a, b = s["start_ns"], s["end_ns"]
        inside = [r for r in recs if r["start_ns"] < b and a < r["end_ns"]]
        comm = _union([(max(r["start_ns"], a), min(r["end_ns"], b)) for r in inside
                       if r["role"] == "communication"])
        comp = _union([(max(r["start_ns"], a), min(r["end_ns"], b)) for r in inside
                       if r["role"] == "compute"])
        covered = sum(max(0, min(y, d) - max(x, c)) for x, y in comm for c, d in comp)
        out.append(sum(y - x for x, y in comm) - covered)
    return out


@pytest.mark.parametrize("launch", ["xl-serial-events-1", "xl-overlap-events-1"])
def test_step_overlap_matches_the_raw_spans(store: Store, launch: str) -> None:
    path = next((DATA / launch).glob("*.rank1.spans.jsonl.gz"))
    want = _exposed_oracle(path)
    got = [r["exposed_comm_ns"] for r in store.rows(
        "SELECT exposed_comm_ns FROM step_overlap WHERE launch_group = ? AND rank = 1 "
        "AND step >= 1 ORDER BY step", [launch])]
    assert got == want


def test_overlap_hides_the_all_reduce_but_the_step_gets_slower(store: Store) -> None:
    v = _versions(store)
    exposed = {r["version"]: r for r in store.rows(
        "SELECT o.options->>'$.version' AS version, median(overlap_ns) AS overlap, "
        "median(exposed_comm_ns) AS exposed FROM step_overlap s "
        "JOIN program_version o USING (program_version) WHERE s.timing_clean AND step >= 1 "
        "GROUP BY ALL")}
    assert exposed["serial"]["overlap"] == 0
    assert exposed["overlap"]["overlap"] > 500_000
    assert exposed["overlap"]["exposed"] < 0.7 * exposed["serial"]["exposed"]
    rows = {(r["quantity"], r["key"]): r for r in collective_diff(store, v["serial"],
                                                                   v["overlap"])}
    ex = rows[("exposed_communication", "step")]
    assert ex["significant"] and ex["ci_high"] < 0.7
    st = rows[("step_time", "step")]
    assert st["significant"] and st["ci_low"] > 1.0  # chunking costs more than it hides
    # and run by run: every overlap launch is slower than every serial one
    med = {}
    for r in store.rows("SELECT o.options->>'$.version' AS version, launch_group, "
                        "median(step_ns) AS m FROM step_overlap s JOIN program_version o "
                        "USING (program_version) WHERE s.timing_clean AND step >= 1 "
                        "GROUP BY ALL"):
        med.setdefault(r["version"], []).append(r["m"])
    assert len(med["serial"]) == 3 and min(med["overlap"]) > max(med["serial"])
    ar = store.rows("SELECT median(exposed_ns) AS m FROM collective_exposure "
                    "WHERE program_version = ? AND op = 'allreduce' AND timing_clean "
                    "AND step >= 1", [v["overlap"]])
    assert ar == [{"m": 0.0}]


def test_clock_alignment_error_is_microseconds(store: Store) -> None:
    rows = store.rows("SELECT launch_group, error_ns, n_matched FROM clock_alignment "
                      "WHERE rank = 1")
    assert len(rows) == len(LAUNCHES)
    assert all(r["error_ns"] < 20_000 and r["n_matched"] >= 77 for r in rows)


def test_derived_exposed_communication_keeps_its_conditions(store: Store) -> None:
    rows = store.rows("SELECT o.options->>'$.version' AS version, e.rank, e.value, "
                      "e.lineage->>'$.conditions' AS cond FROM evidence e "
                      "JOIN program_version o USING (program_version) "
                      "WHERE e.signal = 'exposed_communication' AND e.evidence_class = 'derived'")
    assert {(r["version"], r["rank"]) for r in rows} == {
        (v, r) for v in ("serial", "overlap") for r in ("0", "1")}
    for r in rows:
        cond = json.loads(r["cond"])
        first = cond["dropped"][0]
        assert (first["side"], first["step"], first["reason"]) == ("clean", 0, "warmup")
        assert first["run"] in cond["runs"]["clean"] and len(cond["runs"]["clean"]) == 3
        assert cond["holds"] == (0 <= r["value"] <= cond["medians_ns"]["clean_step"])
    assert all(json.loads(r["cond"])["holds"] for r in rows if r["version"] == "serial")


def test_perfetto_trace_has_a_process_per_rank(store: Store) -> None:
    doc = launch_trace(store, "xl-overlap-cupti-1")
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert names == {"rank 0", "rank 1"}
    tracks = {(e["pid"], e["args"]["name"]) for e in doc["traceEvents"]
              if e.get("name") == "thread_name"}
    assert {p for p, _ in tracks} == {0, 1}
    assert len(tracks) >= 4  # compute and NCCL streams of each rank


def test_collection_cost_figures_are_the_recorded_ones() -> None:
    res = [json.loads(x) for x in (DATA / "results.jsonl").read_text().splitlines()]
    alone = statistics.median(r["mean_step_ns"] for r in res
                              if r["version"] == "overlap" and r["mode"] == "none")
    prof = statistics.median(r["mean_step_ns"] for r in res
                             if r["version"] == "overlap" and r["mode"] == "profiler")
    events = statistics.median(r["mean_step_ns"] for r in res
                               if r["version"] == "overlap" and r["mode"] == "events")
    assert prof / alone > 1.2 and events / alone < 1.05
