"""The runner on recorded H200 bundles (tests/data/gpu): plans of the real planner, executed
with the replay backend, ingested into a real store with variants bound to their parents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.observe.planner import plan as make_plan
from argusdb.observe.runner import execute
from argusdb.observe.runner.backends import Collected, Job, ReplayBackend
from argusdb.observe.runner.harness import Harness
from argusdb.observe.transforms import proton_scopes
from argusdb.store.embedded import Store
from tests.conftest import DATA, GPU_KERNELS

GPU = DATA / "gpu"
# The parent sources the bundles were recorded from (identical to argusdb/demo/kernels/ then).
KERNELS = GPU_KERNELS


def run(store: Store, tmp: Path, program: str, region: str, signals: str
        ) -> tuple[dict, list]:
    p = make_plan(KERNELS / f"{program}.py", region, signals.split(","), None, store).to_json()
    res = execute(p, store, KERNELS / f"{program}.py", tmp / "work", False, ReplayBackend(GPU))
    return p, res


def durations_ns(name: str) -> list[float]:
    recs = [json.loads(x) for x in (GPU / name).read_text().splitlines() if x.strip()]
    return [float(r["end"] - r["start"]) for r in recs if r["kind"] == "CONCURRENT_KERNEL"]


def test_softmax_load_plan_runs_every_task_and_binds_the_variant(store: Store, tmp_path: Path,
                                                                 capsys) -> None:
    p, res = run(store, tmp_path, "softmax", "softmax/softmax_fwd/load",
                 "exposed_latency,inst_executed")
    pid = p["plan_id"]
    assert [(r.action, r.status) for r in res] == [
        ("find_launch", "done"), ("cupti_timing", "done"), ("forced_wait", "done"),
        ("ncu_source", "done"), ("cupti_timing", "done"), ("attribute", "done"),
        ("derive_exposed_latency", "done")]
    # one plain progress line per task on stderr
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 7 and err[0].startswith(f"[1/7] {pid}.find_launch find_launch: done")
    parent, variant = res[0].program_version, res[2].program_version
    assert res[1].program_version == res[3].program_version == parent
    assert res[4].program_version == variant != parent
    assert store.rows("SELECT parent_version, transform, transform_task_id, options::VARCHAR o "
                      "FROM program_version WHERE program_version = ?", [variant]) == [{
        "parent_version": parent, "transform": "forced_wait:softmax/softmax_fwd/load",
        "transform_task_id": f"{pid}.forced_wait",
        "o": '{"config": "default"}'}]
    # runs belong to the plan's collect tasks; ncu gave a source page and a raw page
    runs = store.rows("SELECT task_id, kind FROM run ORDER BY run_seq")
    assert runs == [{"task_id": f"{pid}.cupti_timing.parent", "kind": "cupti.activity_jsonl"},
                    {"task_id": f"{pid}.ncu_source", "kind": "ncu.source_csv"},
                    {"task_id": f"{pid}.ncu_source", "kind": "ncu.raw_csv"},
                    {"task_id": f"{pid}.cupti_timing.forced_wait",
                     "kind": "cupti.activity_jsonl"}]
    # the variant's result check (recorded on the H200: bit-identical output)
    assert store.rows("SELECT rel_err, passed, task_id FROM variant_check") == [
        {"rel_err": 0.0, "passed": True, "task_id": f"{pid}.cupti_timing.forced_wait"}]
    # every task has a cost row in the plan; replayed GPU seconds are the recorded ones
    cost = {r["task_id"].removeprefix(pid + "."): r for r in store.rows(
        "SELECT task_id, status, wall_s, gpu_s FROM task WHERE plan_id = ?", [pid])}
    assert set(cost) == {"find_launch", "cupti_timing.parent", "forced_wait", "ncu_source",
                         "cupti_timing.forced_wait", "attribute", "derive_exposed_latency"}
    assert all(c["status"] == "done" and c["wall_s"] >= 0 for c in cost.values())
    ncu = json.loads((GPU / "ncu.json").read_text())["runs"][0]
    assert cost["ncu_source"]["gpu_s"] == pytest.approx(ncu["wall_s"])
    probe = next(x for x in json.loads((GPU / "probes.json").read_text())["sequential_cold"]
                 ["probes"] if x["stem"] == "softmax.default.fw_load")
    assert cost["cupti_timing.forced_wait"]["gpu_s"] == pytest.approx(
        sum(probe["phases"].values()))


def tukey_median(d: list[float]) -> float:
    x = np.array(d[1:])
    q1, q3 = np.percentile(x, [25, 75])
    return float(np.median(x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]))


@pytest.mark.parametrize(("program", "config", "region"), [
    ("softmax", "default", "load"), ("matmul", "bk64_s3", "mainloop")])
def test_exposed_latency_is_derived_from_the_replayed_runs(store: Store, tmp_path: Path,
                                                           program, config, region) -> None:
    kernel = Harness.read(ProgramSource.from_path(KERNELS / f"{program}.py")).kernel
    rid = f"{program}/{kernel}/{region}"
    _, res = run(store, tmp_path, program, rid, "exposed_latency")
    assert all(r.status == "done" for r in res)
    rows = store.rows("SELECT value, unit, task_id FROM evidence WHERE evidence_class = "
                      "'derived' AND region_id = ?", [rid])
    want = (tukey_median(durations_ns(f"{program}.{config}.fw_{region}.cupti.jsonl"))
            - tukey_median(durations_ns(f"{program}.{config}.run1.cupti.jsonl")))
    assert len(rows) == 1 and rows[0]["unit"] == "ns"
    assert rows[0]["value"] == pytest.approx(want)
    if program == "matmul":  # the forced wait costs the pipelined main loop ~310 us
        assert 300e3 < rows[0]["value"] < 320e3


def plan_doc(program: str, region: str, tasks: list[dict]) -> dict:
    base = {"depends_on": [], "run": None, "why": "test", "params": {}, "reuse": None}
    return {"plan_id": "p-test", "request": {"source": f"{program}.py", "region": region,
                                             "signals": ["duration"], "scope": {}},
            "tasks": [{**base, **t} for t in tasks]}


PIPELINING_OFF = [
    {"id": "p-test.find", "kind": "control", "action": "find_launch"},
    {"id": "p-test.nopipe", "kind": "transform", "action": "pipelining_off",
     "depends_on": ["p-test.find"]},
    {"id": "p-test.t", "kind": "collect", "action": "cupti_timing", "run": "r1",
     "params": {"version": "p-test.nopipe", "launches": 50}, "depends_on": ["p-test.nopipe"]},
]


def test_pipelining_off_is_an_option_variant_timed_and_checked(store: Store,
                                                                tmp_path: Path) -> None:
    p = plan_doc("matmul", "matmul/matmul_kernel/mainloop", PIPELINING_OFF)
    res = {r.task_id: r for r in execute(p, store, KERNELS / "matmul.py", tmp_path, False,
                                         ReplayBackend(GPU))}
    assert [r.status for r in res.values()] == ["done"] * 3
    vid = res["p-test.nopipe"].program_version
    assert res["p-test.t"].program_version == vid
    v = store.rows("SELECT options::VARCHAR o, transform, parent_version FROM program_version "
                   "WHERE program_version = ?", [vid])
    assert v == [{"o": '{"config": "bk64_s3", "num_stages": "1"}', "transform": "pipelining_off",
                  "parent_version": res["p-test.find"].program_version}]
    # same source text as the parent: only the option makes it a version of its own
    assert store.rows("SELECT count(DISTINCT source_sha256) n FROM program_version") == [{"n": 1}]
    assert store.rows("SELECT rel_err, passed FROM variant_check") == [
        {"rel_err": 0.0, "passed": True}]
    # without software pipelining the 4096^3 matmul takes 322.5 us (bk64_s3 parent: 210.3 us)
    med = float(np.median(durations_ns("matmul.bk64_s3.pipelining_off.cupti.jsonl")))
    assert med == pytest.approx(322543.0)


def test_a_missing_recording_fails_its_task_and_skips_what_depends_on_it(store: Store,
                                                                         tmp_path: Path) -> None:
    p = plan_doc("attention", "attention/attn_fwd/load_k", [
        *PIPELINING_OFF,
        {"id": "p-test.d", "kind": "synthesize", "action": "derive_exposed_latency",
         "depends_on": ["p-test.t"]},
        {"id": "p-test.old", "kind": "collect", "action": "cupti_timing", "run": "r2",
         "params": {"version": "parent"}, "reuse": {"run_id": "abc", "why": "stored"}},
    ])
    res = {r.task_id: r for r in execute(p, store, KERNELS / "attention.py", tmp_path, False,
                                         ReplayBackend(GPU))}
    assert res["p-test.nopipe"].status == "done"
    assert res["p-test.t"].status == "failed"
    assert "attention.causal.pipelining_off.cupti.jsonl" in res["p-test.t"].detail["error"]
    assert res["p-test.d"].status == "skipped"
    assert res["p-test.old"].status == "reused" and res["p-test.old"].run_ids == []
    assert store.rows("SELECT count(*) n FROM run") == [{"n": 0}]
    assert store.rows("SELECT status, count(*) n FROM task WHERE plan_id = 'p-test' GROUP BY ALL "
                      "ORDER BY status") == [{"status": "done", "n": 2},
                                             {"status": "failed", "n": 1},
                                             {"status": "reused", "n": 1},
                                             {"status": "skipped", "n": 1}]


def test_replayed_proton_runs_are_bound_to_the_variant_that_ran(tmp_path: Path) -> None:
    # the recording instrumented every region; a plan asking for one region gets the recorded
    # variant's source, so its evidence is keyed to what really ran
    src = ProgramSource.from_path(KERNELS / "softmax.py")
    one = proton_scopes(src, ["load"])
    job = Job("proton_instr", one.source, src, one.transform, "default", {}, {}, tmp_path)
    got = ReplayBackend(GPU).run(job)
    assert [p.name for p in got.paths] == ["softmax.default.instr.chrome_trace.gz"]
    assert got.ran_source is not None
    assert got.ran_source.text == (GPU / "variants" / "softmax.default.proton_scopes.py"
                                   ).read_text()
    assert got.ran_transform == ("proton_scopes:softmax/softmax_fwd/load,"
                                 "softmax/softmax_fwd/reduce,softmax/softmax_fwd/store")
    every = proton_scopes(src, ["load", "reduce", "store"])
    job.source, job.transform = every.source, every.transform
    assert ReplayBackend(GPU).run(job).ran_source is None


def test_a_source_without_a_launch_harness_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    with pytest.raises(InputError, match="no launch harness"):
        Harness.read(ProgramSource.from_path(src))


def test_the_harness_is_read_without_importing_the_kernel() -> None:
    h = Harness.read(ProgramSource.from_path(KERNELS / "attention.py"))
    assert (h.kernel, h.default_config) == ("attn_fwd", "causal")
    assert h.configs["causal"]["BLOCK_N"] == 64


def test_progress_bar_on_request_and_no_plain_lines(store: Store, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    p = plan_doc("matmul", "matmul/matmul_kernel/mainloop", PIPELINING_OFF)
    execute(p, store, KERNELS / "matmul.py", tmp_path, True, ReplayBackend(GPU))
    err = capsys.readouterr().err
    assert "observe: 100%" in err and "3/3" in err
    assert "[1/3]" not in err


def test_backend_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from argusdb.observe.runner.backends import LiveBackend, default_backend

    monkeypatch.setenv("ARGUS_REPLAY", str(GPU))
    backend = default_backend()
    assert isinstance(backend, ReplayBackend) and backend.bundle == GPU
    with pytest.raises(InputError, match="GPU worker script is missing"):
        LiveBackend(worker=tmp_path / "worker.py")


class WrongVariant(ReplayBackend):
    """The recorded runs, with a result check that a broken transform would have given."""

    def run(self, job: Job) -> Collected:
        got = super().run(job)
        if job.transform is not None:
            got.rel_err_vs_parent = 0.25
        return got


def test_a_variant_with_another_result_fails_and_is_not_derived_from(store: Store,
                                                                     tmp_path: Path) -> None:
    p = make_plan(KERNELS / "softmax.py", "softmax/softmax_fwd/load", ["exposed_latency"], None,
                  store).to_json()
    res = {r.action + ("" if r.kind != "collect" else f":{i}"): r for i, r in enumerate(
        execute(p, store, KERNELS / "softmax.py", tmp_path, False, WrongVariant(GPU)))}
    variant = res["cupti_timing:3"]
    assert variant.status == "failed" and "relative error 0.25 > 1e-05" in variant.detail["error"]
    assert variant.run_ids  # stored, and marked by the failed check
    assert res["derive_exposed_latency"].status == "skipped"
    assert store.rows("SELECT rel_err, passed FROM variant_check") == [
        {"rel_err": 0.25, "passed": False}]
    assert store.rows("SELECT count(*) n FROM evidence WHERE evidence_class = 'derived'") == [
        {"n": 0}]
