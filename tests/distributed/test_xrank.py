"""Kernel signals in one rank of a torchrun program, and exposed communication with no step
marker: the plan on a CPU for 1-4 ranks, the hooks in the chosen rank only, and real gloo
launches of the MLP of tests/data/programs/xrank/ (no record_function anywhere)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.store import open_store

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "tests" / "data" / "programs" / "xrank"
SMALL = ["--iters", "6", "--tokens", "64", "--hidden", "32", "--ffn", "64"]
KERNEL_SIGNALS = "duration,inst_executed,exposed_latency,exposed_communication"


def torchrun(n: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n),
            "--standalone", "mlp.py", *SMALL]


def observe(args: list[str], command: list[str]) -> tuple[int, str]:
    out = CliRunner().invoke(main, ["observe", *args, "--", *command])
    return out.exit_code, out.output


def report(out: str) -> dict:
    return json.loads(out[out.index('{"ok"'):])


@pytest.fixture(autouse=True)
def _in_program_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROG)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("ARGUS_REPLAY", raising=False)
    monkeypatch.delenv("ARGUS_DIST_REPLAY", raising=False)


@pytest.mark.parametrize(("n", "rank"), [(1, 0), (2, 1), (4, 3)])
def test_instruction_level_signals_are_planned_in_the_chosen_rank(n: int, rank: int) -> None:
    code, out = observe(["--region", "fused/bias_gelu/load", "--signals", KERNEL_SIGNALS,
                         "--rank", str(rank), "--dry-run", "--json"], torchrun(n))
    assert code == 0, out
    doc = json.loads(out[out.index("{"):])
    pid = doc["tasks"][0]["id"].rsplit(".", 1)[0]
    by = {t["id"].removeprefix(pid + "."): t for t in doc["tasks"]}
    # the per-rank launches, CUPTI's for duration and the window exposure, and the rank's plan
    for name in ("dist_events", "dist_forced", "dist_cupti", "dist_profiler"):
        assert by[name]["params"]["world_size"] == n
    assert set(by["dist_cupti"]["params"]["signals"]) == {"duration", "exposed_communication"}
    kernel = {k: t for k, t in by.items() if k.startswith("k.")}
    assert {"k.find_launch", "k.ncu_source", "k.proton_instr", "k.cupti_timing.forced_wait",
            "k.derive_exposed_latency", "k.attribute"} <= set(kernel)
    assert all(t["params"]["rank"] == rank for t in kernel.values())
    # one run of the program (all ranks, hooks in the chosen one); the rest on replays
    assert [k for k, t in kernel.items() if t["runs_program"]] == ["k.find_launch"]
    req = doc["request"]["kernel"]["request"]
    assert req["launch"] == {"rank": rank, "world_size": n, "launch_group": f"{pid}.kernel"}
    assert req["command"] == torchrun(n)  # the user's own command, not rewritten
    assert "inst_executed" in by["k.ncu_source"]["params"]["signals"]
    # runs numbered on from the launches'
    runs = [t["run"] for t in doc["tasks"] if t["kind"] == "collect"]
    assert runs == [f"r{i}" for i in range(1, len(runs) + 1)]
    # the plan says what exposed_communication is read from, with no step assumed
    note = next(x for x in doc["notes"] if x.startswith("exposed_communication:"))
    assert "measured window" in note and "found from the repetition" in note


@pytest.mark.parametrize(("args", "command", "needle"), [
    (["--rank", "2"], torchrun(2), "--rank 2: the launch has ranks 0..1"),
    (["--rank", "0"], [sys.executable, "mlp.py"], "only a torchrun command has ranks"),
])
def test_a_rank_that_is_not_there_is_refused(args: list[str], command: list[str],
                                             needle: str) -> None:
    code, out = observe(["--region", "fused/bias_gelu/load", "--signals", "inst_executed",
                         *args, "--dry-run"], command)
    assert code == 2 and needle in out and "Traceback" not in out, out


def test_a_region_without_a_load_says_exposed_latency_is_not_applicable() -> None:
    code, out = observe(["--region", "fused/bias_gelu/gelu", "--signals",
                         "inst_executed,exposed_latency", "--dry-run", "--json"], torchrun(2))
    assert code == 0, out
    doc = json.loads(out[out.index("{"):])
    assert "exposed_latency" in doc["request"]["kernel"]["request"]["not_applicable"]


@pytest.mark.slow
def test_the_hooks_install_in_the_chosen_rank_only(tmp_path: Path) -> None:
    out = tmp_path / "hooks"
    p = subprocess.run([sys.executable, "-m", "argusdb.observe.launch", "--kernel",
                        "bias_gelu", "--program", "fused", "--out", str(out), "--mode", "plain",
                        "--rank", "1", "--", *torchrun(2)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    from argusdb.observe.launch import read_launches

    docs = read_launches(out)
    assert [d["rank"] for d in docs] == ["1"]  # not rank 0, not torchrun's agent
    assert len(docs[0]["launches"]) == 12  # 2 launches per iteration, 6 iterations


def _union(spans: list[tuple[int, int]]) -> int:
    """Length of the union of intervals: the oracle of rank_window's comm_ns."""
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3])
def test_gloo_without_step_marker_answers_exposed_communication(tmp_path: Path, n: int) -> None:
    store = tmp_path / "s.duckdb"
    code, out = observe(["--region", "fused/bias_gelu/load", "--signals",
                         "exposed_communication,inst_executed", "--store", str(store),
                         "--json"], torchrun(n))
    rep = report(out)
    # inst_executed needs CUDA: insufficient with the reason, nothing stored; the rest answered
    assert code == 1 and not rep["ok"], out
    k = rep["kernel"]["signals"]["inst_executed"]
    assert k["verdict"] == "insufficient" and "no NVIDIA GPU" in k["why"]
    ex = rep["distributed"]["signals"]["exposed_communication"]
    assert ex["verdict"] == "sufficient", ex
    assert [r["rank"] for r in ex["per_rank"]] == list(range(n))
    events = next(t for t in rep["tasks"] if t["action"] == "dist_events")
    folder = Path(events["detail"]["log"]).parent
    for r in ex["per_rank"]:
        # steps found from the sizes of the two all-reduces (a quarter and three quarters)
        assert r["per"] == "step (found: period 2)" and r["n_steps"] == 5
        assert r["basis"] == "spans" and r["upper_bound"]  # no compute spans recorded
        # the window's communication is the union of the rank's collective spans
        lines = (folder / f"mlp.rank{r['rank']}.spans.jsonl").read_text().splitlines()[1:]
        spans = [(d["start_ns"], d["end_ns"]) for d in map(json.loads, lines)
                 if d["role"] == "communication"]
        assert len(spans) == 12
        assert r["window_comm_ns"] == _union(spans) == r["window_exposed_comm_ns"]
    with open_store(store, read_only=True) as st:
        assert st.rows("SELECT count(*) AS n FROM run WHERE launch_group = ?",
                       [f"{rep['plan_id']}.kernel"]) == [{"n": 0}]
        rows = st.rows("SELECT rank, basis FROM rank_window WHERE launch_group = ? "
                       "ORDER BY rank", [f"{rep['plan_id']}.events"])
        assert rows == [{"rank": k, "basis": "spans"} for k in range(n)]



H200 = ROOT / "tests" / "data" / "gpu" / "xrank"


def test_recorded_one_rank_h200_launch_answers_every_signal(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The 1-rank H200 recording (tools/h200/observe_xrank.sh): the launches replayed per mode,
    the rank's kernel plan from its task folders; every signal answered, as on the H200."""
    monkeypatch.setenv("ARGUS_DIST_REPLAY", str(H200 / "dist"))
    monkeypatch.setenv("ARGUS_REPLAY", str(H200 / "kernel"))
    store = tmp_path / "s.duckdb"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1",
           "--standalone", "mlp.py", "--iters", "12"]
    code, out = observe(["--region", "fused/bias_gelu/load", "--signals", KERNEL_SIGNALS,
                         "--store", str(store), "--json"], cmd)
    assert code == 0, out
    rep = report(out)
    recorded = report((H200 / "observe.json").read_text())
    assert rep["ok"] and recorded["ok"]
    dist, kern = rep["distributed"]["signals"], rep["kernel"]["signals"]
    assert {s: a["verdict"] for s, a in dist.items()} == {
        "duration": "sufficient", "exposed_communication": "sufficient"}
    assert {s: a["verdict"] for s, a in kern.items()} == {
        "duration": "sufficient", "inst_executed": "sufficient",
        "exposed_latency": "sufficient"}
    # duration per rank: the kernel's CUPTI records in the Kineto trace (24 = 2 x 12 iterations)
    trace = json.loads(gzip.decompress((H200 / "dist" / "cupti" /
                                        "mlp.rank0.kineto.json.gz").read_bytes()))
    durs = sorted(round(e["dur"] * 1000) for e in trace["traceEvents"]
                  if e.get("cat") == "kernel" and e["name"] == "bias_gelu")
    assert not any(e["name"].startswith("nccl") for e in trace["traceEvents"]
                   if e.get("cat") == "kernel")  # one rank: NCCL launches no kernel
    (d,) = dist["duration"]["per_rank"]
    assert d["n"] == len(durs) == 24
    assert d["median_dur_ns"] == pytest.approx((durs[11] + durs[12]) / 2, abs=1)
    # exposed communication: no step marker, steps found (2 all-reduces per iteration); no NCCL
    # kernel, so the collective spans are read, with no compute span: an upper bound
    (x,) = dist["exposed_communication"]["per_rank"]
    assert (x["per"], x["n_steps"], x["basis"], x["upper_bound"]) == (
        "step (found: period 2)", 11, "spans", True)
    assert "no NCCL kernel" in x["why_basis"]
    lines = (H200 / "dist" / "events" / "mlp.rank0.spans.jsonl").read_text().splitlines()[1:]
    spans = [(d["start_ns"], d["end_ns"]) for d in map(json.loads, lines)
             if d["role"] == "communication"]
    assert len(spans) == 24 and x["window_comm_ns"] == _union(spans)
    # kernel signals of rank 0: instruction counts conserved over the regions, the in-context
    # duration apart from the replayed launch's, exposed latency = variant - parent replays
    assert rep["kernel"]["attribution"]["inst_executed"]["verdict"] == "sufficient"
    rows = {(r["signal"], r["evidence_class"], r["region_id"], r["signature"],
             r["program_version"] == kern["duration"]["rows"][1]["program_version"]): r
            for s in kern.values() for r in s["rows"]}
    assert all(r["rank"] == "0" for r in rows.values())
    ctx = rows[("duration", "observed", "fused/bias_gelu", "activity_tracing", True)]
    assert ctx["n"] == 18 and ctx["median"] == 6208.0  # the H200's "median 6.21 us over 18"
    parent = rows[("duration", "observed", "fused/bias_gelu",
                   "launch_replay+activity_tracing+cache:all", True)]
    variant = rows[("duration", "observed", "fused/bias_gelu",
                    "launch_replay+activity_tracing+cache:all", False)]
    (lat,) = kern["exposed_latency"]["rows"]
    assert lat["evidence_class"] == "derived" and lat["region_id"] == "fused/bias_gelu/load"
    assert lat["sum"] == variant["median"] - parent["median"] == 512.0
    insts = [r for r in kern["inst_executed"]["rows"] if r["evidence_class"] == "attributed"]
    assert [r["region_id"] for r in insts] == ["fused/bias_gelu/load"]
    assert 0 < insts[0]["sum"] < rep["kernel"]["attribution"]["inst_executed"]["observed"]
    # the same answers the H200 gave
    for sig in ("inst_executed", "exposed_latency"):
        assert [r["sum"] for r in kern[sig]["rows"]] == [
            r["sum"] for r in recorded["kernel"]["signals"][sig]["rows"]]
    assert x["window_exposed_comm_ns"] == recorded["distributed"]["signals"][
        "exposed_communication"]["per_rank"][0]["window_exposed_comm_ns"]
    with open_store(store, read_only=True) as st:
        runs = st.rows("SELECT DISTINCT rank, world_size FROM run WHERE launch_group = ?",
                       [f"{rep['plan_id']}.kernel"])
        assert runs == [{"rank": 0, "world_size": 1}]


@pytest.mark.gpu
def test_one_rank_on_a_gpu_answers_kernel_and_communication_signals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Live, on one GPU (tools/h200/observe_xrank.sh ran this on an H200)."""
    monkeypatch.delenv("TRITON_INTERPRET")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1",
           "--standalone", "mlp.py", "--iters", "12"]
    code, out = observe(["--region", "fused/bias_gelu/load", "--signals", KERNEL_SIGNALS,
                         "--store", str(tmp_path / "s.duckdb"), "--json"], cmd)
    assert code == 0, out
    rep = report(out)
    assert all(a["verdict"] == "sufficient" for a in rep["distributed"]["signals"].values())
    assert rep["kernel"]["answered"] and rep["kernel"]["rank"] == 0
