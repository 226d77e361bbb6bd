"""``argus observe ... -- torchrun``: the plan on a CPU, and real gloo launches of 2 and 4 ranks
observed end to end (launch, per-rank ingest, answers, refusals)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.store import open_store

ROOT = Path(__file__).resolve().parents[2]
XL = ROOT / "tools" / "h200" / "xlayer"
SMALL = ["--steps", "5", "--warmup", "1", "--tokens", "64", "--hidden", "32", "--ffn", "64",
         "--chunks", "2"]


def launcher(n: int, *args: str) -> list[str]:
    """A ``torch.distributed.run`` command of ``n`` ranks on this node."""
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n),
            "--standalone", *args]


def torchrun(n: int, *extra: str, version: str = "serial") -> list[str]:
    return launcher(n, *extra, "tp_block.py", "--version", version, *SMALL)


def observe(args: list[str], command: list[str]) -> tuple[int, str]:
    out = CliRunner().invoke(main, ["observe", *args, "--", *command])
    return out.exit_code, out.output


def report(out: str) -> dict[str, Any]:
    """The ``--json`` report in an observe's output (after what the launch printed)."""
    rep: dict[str, Any] = json.loads(out[out.index('{"ok"'):])
    return rep


def failed_step_time(region: str, store: Path, command: list[str]) -> dict[str, Any]:
    """The first failed task of observing ``step_time`` of ``region`` into ``store`` (exit 1)."""
    code, out = observe(["--region", region, "--signals", "step_time", "--store", str(store),
                         "--json"], command)
    assert code == 1, out
    failed: dict[str, Any] = report(out)["failed"][0]
    return failed


def stores_no_run(store: Path) -> bool:
    with open_store(store, read_only=True) as st:
        return st.rows("SELECT count(*) AS n FROM run") == [{"n": 0}]


@pytest.fixture(autouse=True)
def _in_program_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(XL)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.mark.parametrize("n", [2, 4, 3])
def test_dry_run_plans_one_launch_per_mode_for_any_n(n: int) -> None:
    code, out = observe(["--region", "tp_block/step", "--signals",
                         "duration,exposed_communication", "--dry-run", "--json"], torchrun(n))
    assert code == 0, out
    doc = json.loads(out[out.index("{"):])
    by = {t["action"]: t for t in doc["tasks"]}
    # dist_cupti: kernel records of every stream, for the window reading of the exposure
    assert list(by) == ["torchrun_command", "dist_events", "collectives_forced_sync",
                        "dist_profiler", "dist_cupti", "dist_forced", "dist_overlap"]
    assert by["dist_cupti"]["params"]["signals"] == ["exposed_communication"]
    for action, mode in (("dist_events", "events"), ("dist_forced", "forced"),
                         ("dist_profiler", "profiler"), ("dist_cupti", "cupti")):
        t = by[action]
        assert t["params"]["mode"] == mode and t["params"]["world_size"] == n
        assert t["params"]["ranks"] == list(range(n))
        assert len(t["params"]["artefacts"]) == n and t["params"]["launch_group"].endswith(mode)
    # the perturbed variant feeds the forced launch; the clean launch answers duration of a step
    assert by["collectives_forced_sync"]["id"] in by["dist_forced"]["depends_on"]
    assert "duration" in by["dist_events"]["params"]["signals"]
    argv = by["torchrun_command"]["params"]["argv"]
    i = argv.index("argusdb.observe.launch.rank_boot")
    assert argv[i - 1] == "-m" and argv[i + 1] == "tp_block.py"
    assert doc["request"]["distributed"]["world_size"] == n


def test_dry_run_kernel_region_plans_a_cupti_launch_and_no_forced_one() -> None:
    code, out = observe(["--region", "tp_block/bias_gelu_kernel", "--signals", "duration",
                         "--dry-run", "--json"], torchrun(2))
    assert code == 0, out
    doc = json.loads(out[out.index("{"):])
    actions = [t["action"] for t in doc["tasks"]]
    assert "dist_cupti" in actions and "dist_forced" not in actions
    assert doc["request"]["distributed"]["target"] == "kernel"


@pytest.mark.parametrize(("args", "command", "needle"), [
    (["--region", "tp_block/step", "--signals", "inst_executed"], torchrun(2),
     "is a signal of a Triton kernel, and tp_block/step is the program's step"),
    (["--region", "tp_block/step", "--signals", "inst_excuted"], torchrun(2),
     "not collected from a torchrun program. Did you mean 'inst_executed'"),
    (["--region", "nosuch/step", "--signals", "step_time"], torchrun(2),
     "not a Triton region of nosuch.py"),
    (["--region", "tp_block/step", "--signals", "step_time"],
     torchrun(2, "--nnodes", "2"), "observe launches one node"),
    (["--region", "tp_block/step", "--signals", "step_time"],
     torchrun(2, "--no-python"), "--no-python"),
    (["--region", "tp_block/step", "--signals", "step_time", "--scope", "warp=each"],
     torchrun(2), "per rank"),
])
def test_requests_that_cannot_be_planned_exit_2(args: list[str], command: list[str],
                                                needle: str) -> None:
    code, out = observe([*args, "--dry-run"], command)
    assert code == 2 and needle in out and "Traceback" not in out, out


@pytest.mark.slow
def test_two_ranks_live_on_gloo(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    code, out = observe(["--region", "tp_block/step", "--signals",
                         "duration,exposed_communication,collective_duration,host_ops",
                         "--store", str(store), "--option", "version=serial", "--json"],
                        torchrun(2))
    assert code == 0, out
    rep = report(out)
    assert rep["ok"] and not rep["failed"]
    d = rep["distributed"]["signals"]
    assert all(v["verdict"] == "sufficient" for v in d.values())
    assert [r["rank"] for r in d["duration"]["per_rank"]] == [0, 1]
    assert all(r["n"] == 5 for r in d["duration"]["per_rank"])  # steps 1..5 (0 is warm-up)
    with open_store(store, read_only=True) as st:
        runs = st.rows("SELECT r.rank, r.launch_group, r.timing_clean, r.forced_wait, "
                       "r.torch_profiler, t.plan_id FROM run AS r JOIN task AS t "
                       "USING (task_id) ORDER BY r.launch_group, r.rank")
        plan = rep["plan_id"]
        assert {(r["launch_group"], r["rank"]) for r in runs} == {
            (f"{plan}.{m}", k) for m in ("events", "forced", "profiler") for k in (0, 1)}
        clean = {r["launch_group"]: r["timing_clean"] for r in runs}
        assert clean == {f"{plan}.events": True, f"{plan}.forced": False,
                         f"{plan}.profiler": False}
        # step time as an answer comes from the clean launch only, and equals its spans
        steps = st.rows("SELECT rank, median(dur_ns) AS m FROM interval_event WHERE "
                        "launch_group = ? AND kind = 'step' AND step >= 1 GROUP BY rank "
                        "ORDER BY rank", [f"{plan}.events"])
        assert [s["m"] for s in steps] == [r["median_dur_ns"]
                                           for r in d["duration"]["per_rank"]]
        # host ops per rank from the profiler launch; collectives keyed (pg, seq, op) on both
        hosts = st.rows("SELECT rank, count(*) AS n FROM rank_interval WHERE kind = 'host_op' "
                        "AND launch_group = ? GROUP BY rank ORDER BY rank", [f"{plan}.profiler"])
        assert [h["rank"] for h in hosts] == [0, 1] and all(h["n"] > 0 for h in hosts)
        keys = st.rows("SELECT pg, seq, op, count(DISTINCT c.rank) AS ranks FROM collective AS c "
                       "JOIN run AS r USING (run_id) WHERE r.launch_group = ? GROUP BY ALL",
                       [f"{plan}.events"])
        assert keys and all(k["ranks"] == 2 for k in keys)
        # the derived value, per rank, from the forced variant paired with the clean runs
        der = st.rows("SELECT r.rank FROM derived_evidence AS e JOIN run AS r USING (run_id) "
                      "WHERE e.signal = 'exposed_communication' ORDER BY r.rank")
        assert [x["rank"] for x in der] == [0, 1]
        # clock alignment stored as evidence with its error
        off = st.rows("SELECT count(*) AS n FROM evidence WHERE signal = 'clock_offset'")
        assert off[0]["n"] >= 2
        costs = st.rows("SELECT task_id, status, wall_s FROM task WHERE plan_id = ? AND "
                        "kind = 'collect' ORDER BY task_id", [plan])
        # the CUPTI launch (the window reading of the exposure) is not started without a GPU
        assert [c["status"] for c in costs if c["task_id"].endswith(".dist_cupti")] == [
            "insufficient"]
        done = [c for c in costs if not c["task_id"].endswith(".dist_cupti")]
        assert len(done) == 3 and all(c["status"] == "done" and c["wall_s"] > 0.5
                                      for c in done)
    # the next plan's costs come from these launches
    code, out = observe(["--region", "tp_block/step", "--signals", "exposed_communication",
                         "--store", str(store), "--dry-run", "--json"], torchrun(4))
    assert code == 0, out
    est = {t["action"]: t["estimate"] for t in json.loads(out[out.index("{"):])["tasks"]}
    assert est["dist_events"]["wall_s"] > 0.5 and est["dist_forced"]["from_tasks"] == 1
    # the same 2-rank request again: every launch of this version, mode and rank count is
    # reused, nothing is launched or stored, and the answers are the same
    code, out = observe(["--region", "tp_block/step", "--signals",
                         "duration,exposed_communication,collective_duration,host_ops",
                         "--store", str(store), "--option", "version=serial", "--json"],
                        torchrun(2))
    assert code == 0, out
    again = json.JSONDecoder().raw_decode(out[out.index('{"ok"'):])[0]
    collect = [t for t in again["tasks"] if t["action"] in ("dist_events", "dist_forced",
                                                            "dist_profiler")]
    assert len(collect) == 3 and all(t["status"] == "reused" for t in collect)
    assert {t["reuse"]["launch_group"] for t in collect} == {
        f"{plan}.{m}" for m in ("events", "forced", "profiler")}
    assert again["distributed"]["signals"]["duration"] == d["duration"]
    with open_store(store, read_only=True) as st:
        assert st.rows("SELECT count(*) AS n FROM run")[0]["n"] == len(runs)


def test_the_python_api_plans_a_torchrun_command() -> None:
    from argusdb.observe import observe as api_observe

    obs = api_observe("tp_block/step", "step_time", run=torchrun(2), dry_run=True)
    assert [t.action for t in obs.plan.tasks] == ["torchrun_command", "dist_events",
                                                  "dist_profiler", "dist_overlap"]
    assert obs.report["distributed"]["world_size"] == 2 and obs.evidence is None


@pytest.mark.slow
def test_four_ranks_live_kernel_duration_is_insufficient_without_cuda(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    code, out = observe(["--region", "tp_block/bias_gelu_kernel", "--signals",
                         "duration,step_time", "--store", str(store), "--json"], torchrun(4))
    assert code == 1, out  # one asked signal could not be answered here
    rep = report(out)
    sig = rep["distributed"]["signals"]
    assert sig["duration"]["verdict"] == "insufficient"
    assert "no NVIDIA GPU" in sig["duration"]["why"] and sig["duration"]["per_rank"] == []
    assert sig["step_time"]["verdict"] == "sufficient"
    assert [r["rank"] for r in sig["step_time"]["per_rank"]] == [0, 1, 2, 3]
    crit = [r for r in rep["distributed"]["critical_rank"] if r["is_critical"]]
    assert len(crit) == 1
    with open_store(store, read_only=True) as st:
        assert st.rows("SELECT count(*) AS n FROM kernel_launch") == [{"n": 0}]
        assert st.rows("SELECT status FROM task WHERE task_id LIKE '%dist_cupti'") == [
            {"status": "insufficient"}]


@pytest.mark.slow
def test_a_failing_program_stores_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("raise SystemExit('bad input shape')\n")
    store = tmp_path / "s.duckdb"
    failed = failed_step_time("bad/step", store, launcher(1, str(bad)))
    assert failed["action"] == "dist_events" and "torchrun exited" in failed["error"]
    assert stores_no_run(store)


#: An ordinary data-parallel loop, not written for argusdb: gradients all-reduced per step,
#: a broadcast every other step, its own "work" range; run as a module (torchrun -m).
DP_PROGRAM = '''
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
w = torch.randn(64, 64)
for i in range(6):
    with torch.profiler.record_function("train_step"):
        with torch.profiler.record_function("work"):
            g = (torch.randn(128, 64) @ w).sum(0)
        dist.all_reduce(g)
        if i % 2 == 0:
            dist.broadcast(w, src=0)
dist.destroy_process_group()
'''


@pytest.mark.slow
def test_an_unseen_module_program_with_its_own_step_name(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "dpjob"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "loop.py").write_text(DP_PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARGUS_STEP_MARK", "train_step")
    store = tmp_path / "s.duckdb"
    cmd = launcher(3, "-m", "dpjob.loop")
    code, out = observe(["--region", "loop/work", "--signals", "duration,collective_bytes",
                         "--store", str(store), "--json"], cmd)
    assert code == 0, out
    rep = report(out)
    sig = rep["distributed"]["signals"]
    assert [r["rank"] for r in sig["duration"]["per_rank"]] == [0, 1, 2]
    assert all(r["name"] == "work" and r["n"] == 5 for r in sig["duration"]["per_rank"])
    ops = {(r["rank"], r["op"]): r for r in sig["collective_bytes"]["per_rank"]}
    assert set(ops) == {(k, op) for k in range(3) for op in ("allreduce", "broadcast")}
    assert ops[(0, "allreduce")]["bytes"] == 64 * 4
    assert ops[(2, "broadcast")]["bytes"] == 64 * 64 * 4
    # steps 1..5 of 6 by the program's own step name; broadcasts in steps 2 and 4
    assert ops[(1, "allreduce")]["n"] == 5 and ops[(1, "broadcast")]["n"] == 2


def replay_dir(tmp_path: Path, version: str) -> Path:
    """The 2-H200 launches of one version as a replay folder: <mode>/ per recorder mode."""
    data = ROOT / "tests" / "data" / "gpu" / "xlayer"
    root = tmp_path / f"replay-{version}"
    root.mkdir()
    for mode in ("events", "forced", "profiler", "cupti"):
        (root / mode).symlink_to(data / f"xl-{version}-{mode}-1")
    return root


def test_replayed_2xh200_launches_answer_kernel_duration_and_exposed_communication(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_DIST_REPLAY", str(replay_dir(tmp_path, "overlap")))
    store = tmp_path / "s.duckdb"
    code, out = observe(["--region", "tp_block/bias_gelu_kernel", "--signals",
                         "duration,exposed_communication,collective_duration", "--store",
                         str(store), "--option", "version=overlap", "--option", "target=sm_90",
                         "--json"], torchrun(2, version="overlap"))
    assert code == 0, out
    rep = report(out)
    sig = rep["distributed"]["signals"]
    dur = sig["duration"]
    assert dur["launch_group"] == "xl-overlap-cupti-1" and dur["verdict"] == "sufficient"
    assert [r["rank"] for r in dur["per_rank"]] == [0, 1]
    # 60 measured steps + warm-up: each rank launched bias_gelu_kernel 4 times per step
    assert all(r["name"] == "bias_gelu_kernel" and r["n"] > 200 for r in dur["per_rank"])
    ex = sig["exposed_communication"]
    assert ex["launch_group"] == "xl-overlap-events-1"
    assert all(200_000 < r["exposed_comm_ns"] < 300_000 for r in ex["per_rank"])  # 252 us
    assert [r["rank"] for r in ex["derived"]["per_rank"]] == [0, 1]
    assert rep["distributed"]["critical_rank"][1]["is_critical"]
    coll = {(r["rank"], r["op"]): r for r in sig["collective_duration"]["per_rank"]}
    ag = coll[(0, "allgather")]  # 64 MiB over NVLink: busbw = algbw / 2 for 2 ranks
    assert ag["bytes"] == 8192 * 4096 * 2 and 150 < ag["busbw_gbps"] < 300
    assert ag["busbw_gbps"] == pytest.approx(ag["algbw_gbps"] / 2)
    assert coll[(1, "allreduce")]["n"] == 4 * 62  # four chunks per step, steps 1..62


def test_a_replay_of_another_world_size_is_refused_and_nothing_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_DIST_REPLAY", str(replay_dir(tmp_path, "serial")))
    store = tmp_path / "s.duckdb"
    failed = failed_step_time("tp_block/step", store, torchrun(4))
    assert "launched with 2 ranks, not 4" in failed["error"]
    assert stores_no_run(store)


@pytest.mark.slow
def test_a_launch_past_its_time_limit_is_stopped_with_its_ranks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text("import os, time\n"
                    "open(os.environ['ARGUS_DIST_OUT'] + f'/pid{os.getpid()}', 'w').close()\n"
                    "time.sleep(600)\n")
    monkeypatch.setenv("ARGUS_DIST_TIMEOUT_S", "25")
    store = tmp_path / "s.duckdb"
    assert "ran past 25 s" in failed_step_time("hang/step", store, launcher(2, str(hang)))["error"]
    pids = [int(f.name[3:]) for f in tmp_path.rglob("pid*")]
    assert len(pids) >= 2  # both ranks had started (25 s: rank start-up under load takes >12 s) ...
    import os
    import time

    time.sleep(1)
    for pid in pids:  # ... and none of them is left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert stores_no_run(store)


def test_a_bad_time_limit_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ARGUS_DIST_TIMEOUT_S", "soon")
    code, out = observe(["--region", "tp_block/step", "--signals", "step_time", "--store",
                         str(tmp_path / "s.duckdb")], torchrun(2))
    assert code == 2 and "ARGUS_DIST_TIMEOUT_S" in out
    assert not (tmp_path / "s.duckdb").exists()
