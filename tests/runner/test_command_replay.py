"""Three user programs observed unmodified on the H200, replayed here from the recorded tasks.

``tools/h200/observe_programs.sh`` ran ``argus observe --region R --signals
duration,inst_executed,warp_stall_samples,exposed_latency -- python3 PROG`` from an installed
wheel; each task's folder is in ``tests/data/gpu/programs/<program>/``. Here the same command
runs with ``ARGUS_REPLAY`` pointing at them, planned as they were recorded (``--no-replay``:
every collection ran the program): every step after collection (program versions
from the found binary, ingest of its TTGIR and SASS, attribution, derivation, reuse, budget) runs
for real, and the figures README states are recomputed (``tools/h200/program_figures.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.store import open_store
from tools.h200.program_figures import figures

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "data" / "programs"
RECORDED = ROOT / "tests" / "data" / "gpu" / "programs"
SIGNALS = "duration,inst_executed,warp_stall_samples,exposed_latency"
CASES = {"model": ("fused_norm/layernorm_fwd/load", ["python3", "model.py"]),
         "autotuned": ("softmax_tuned/softmax_kernel/load", ["python3", "run.py"]),
         "pipelined": ("matmul_loop/matmul_kernel/load_tiles", ["python3", "gemm.py"])}
#: The region's own duration is a Proton-instrumented launch (``proton_instr``, recorded in
#: each bundle by ``tools/h200/programs_proton_bundles.txt``), except for the pipelined GEMM:
#: its region is inside the K loop, so Proton writes an event per iteration, warp and CTA
#: (4.7 MB compressed), which is not kept here; that case asks for the other signals.
CASE_SIGNALS = {"model": SIGNALS, "autotuned": SIGNALS,
                "pipelined": "inst_executed,warp_stall_samples,exposed_latency"}
TASKS = {"model": 9, "autotuned": 9, "pipelined": 7}


def observe(monkeypatch: pytest.MonkeyPatch, name: str, store: Path, *extra: str
            ) -> tuple[int, dict[str, Any]]:
    region, argv = CASES[name]
    monkeypatch.chdir(PROGRAMS / name)
    monkeypatch.setenv("ARGUS_REPLAY", str(RECORDED / name))
    r = CliRunner().invoke(main, ["observe", "--region", region, "--signals", CASE_SIGNALS[name],
                                  "--store", str(store), "--json", "--no-replay", *extra,
                                  "--", *argv])
    return r.exit_code, json.loads(r.stdout.splitlines()[-1] if r.stdout else "{}")


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("replay") / "s.duckdb"
    mp = pytest.MonkeyPatch()
    try:
        reports = {n: observe(mp, n, store) for n in CASES}
    finally:
        mp.undo()
    with open_store(store, read_only=True) as st:
        figs = {n: figures(st, CASES[n][0]) for n in CASES}
    return {"store": store, "reports": reports, "figures": figs}


@pytest.mark.parametrize("name", list(CASES))
def test_every_task_runs_and_the_report_is_ok(observed: dict[str, Any], name: str) -> None:
    code, rep = observed["reports"][name]
    assert code == 0 and rep["ok"] and rep["failed"] == []
    assert [t["status"] for t in rep["tasks"]] == ["done"] * TASKS[name]
    assert {"attributed", "observed"} <= set(rep["evidence"]["inst_executed"])
    assert rep["evidence"]["exposed_latency"] == {"derived": 1}
    if "duration" in CASE_SIGNALS[name]:
        # one instrumented launch: every recorded CTA and warp, cycles in the region
        cycles = rep["evidence"]["scope_cycles"]
        assert cycles["attributed"] == cycles["observed"] > 0


@pytest.mark.parametrize("name", list(CASES))
def test_attributed_totals_equal_observed_with_nothing_unattributed(
        observed: dict[str, Any], name: str) -> None:
    for sig, c in observed["figures"][name]["conservation"].items():
        assert c["equal"] and c["attributed"] == c["observed"] > 0, sig
        assert c["unattributed_share"] == 0.0, sig
    assert "_unattributed" not in observed["figures"][name]["by_region"]
    verdict = observed["reports"][name][1]["attribution"]
    assert set(verdict) == {"inst_executed", "warp_stall_samples"}
    assert all(v["verdict"] == "sufficient" and v["unattributed_share"] == 0.0
               for v in verdict.values())


def test_without_the_binary_s_call_sites_the_verdict_is_insufficient(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same recording with the control run's TTGIR left out: tl.sum's instructions
    (standard.py) have no call site in a region, so the report says insufficient."""
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(RECORDED / "model", bundle)
    doc = json.loads((bundle / "find_launch" / "result.json").read_text())
    doc["files"] = [f for f in doc["files"] if not f.endswith(".ttgir")]
    (bundle / "find_launch" / "result.json").write_text(json.dumps(doc))
    monkeypatch.setenv("ARGUS_REPLAY", str(bundle))
    monkeypatch.chdir(PROGRAMS / "model")
    r = CliRunner().invoke(main, ["observe", "--region", CASES["model"][0], "--signals",
                                  "inst_executed", "--store", str(tmp_path / "s.duckdb"),
                                  "--json", "--no-replay", "--", "python3", "model.py"])
    rep = json.loads(r.stdout)
    v = rep["attribution"]["inst_executed"]
    assert v["verdict"] == "insufficient" and 0 < v["unattributed_share"] < 1
    assert "_unattributed" in v["why"]


def test_library_code_lands_in_the_calling_regions(observed: dict[str, Any]) -> None:
    model = observed["figures"]["model"]["library_lines"]
    # tl.sum (standard.py 263, 293) is called from 'mean' and from 'var': split between them
    assert {(x["file"], x["line"]) for x in model} == {("standard.py", 263),
                                                       ("standard.py", 293)}
    assert all(x["regions"] == ["fused_norm/layernorm_fwd/mean", "fused_norm/layernorm_fwd/var"]
               for x in model)
    soft = observed["figures"]["autotuned"]["library_lines"]
    assert soft and all(x["regions"] == ["softmax_tuned/softmax_kernel/reduce"] for x in soft)


def test_pipelined_loop_exposed_latency_is_above_noise(observed: dict[str, Any]) -> None:
    (el,) = observed["figures"]["pipelined"]["exposed_latency"]
    assert el["above_noise"] and el["check"]["passed"] and el["check"]["rel_err"] == 0.0
    assert el["value"] > 100 * max(el["parent_iqr_ns"], el["variant_iqr_ns"])
    assert el["value"] == pytest.approx(247055.5)


def test_autotuned_kernel_evidence_is_all_from_the_chosen_binary(observed: dict[str, Any]
                                                                 ) -> None:
    found = json.loads((RECORDED / "autotuned" / "find_launch" / "result.json").read_text())
    assert found["launches"]["autotune"] > 0 and len(found["binaries"]) == 3
    chosen = found["binary"]
    figs = observed["figures"]["autotuned"]["binaries"]
    # every CUPTI row of the kernel in the plan: 32 threads = num_warps 1, the chosen config
    assert chosen["num_warps"] == 1 and figs["cupti_block_x"] == [32]
    parent = figs["versions"][0]
    assert parent["binary"] == chosen["hash"] and parent["num_warps"] == "1"
    ncu = json.loads((RECORDED / "autotuned" / "ncu_source" / "result.json").read_text())
    assert ncu["binary"] == chosen["hash"]
    raw = (RECORDED / "autotuned" / "ncu_source" / "ncu.raw.csv").read_text().splitlines()
    header = [h.strip('"') for h in raw[0].split('","')]
    row = [v.strip('"') for v in raw[2].split('","')]
    assert row[header.index("launch__block_size")] == "32"


def test_the_same_request_again_reuses_the_runs_of_the_same_binary(
        observed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    code, rep = observe(monkeypatch, "model", observed["store"])
    assert code == 0
    status = {t["id"].split(".", 1)[1]: t["status"] for t in rep["tasks"]}
    assert status["cupti_timing.parent"] == status["ncu_source"] == "reused"
    assert status["cupti_timing.forced_wait"] == "reused" and status["find_launch"] == "done"
    assert status["proton_instr"] == "reused"


def test_budget_drops_signals_by_recorded_costs(observed: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _, argv = CASES["model"]
    monkeypatch.chdir(PROGRAMS / "model")

    def dry(*extra: str) -> dict[str, Any]:
        r = CliRunner().invoke(main, ["observe", "--region", "fused_norm/layernorm_fwd/store",
                                      "--signals", SIGNALS, "--store", str(observed["store"]),
                                      "--dry-run", "--json", "--no-replay", *extra, "--",
                                      *argv])
        assert r.exit_code == 0, r.stderr
        return dict(json.loads(r.stdout))

    full = dry()
    costs = {t["action"]: t["estimate"]["wall_s"] for t in full["tasks"]
             if not t["reuse"] and t["estimate"]}
    total = sum(t["estimate"]["wall_s"] for t in full["tasks"] if not t["reuse"])
    # between the control run alone and the whole plan: something must go
    budget = (costs["find_launch"] + total) / 2
    doc = dry("--budget-s", str(budget))
    assert doc["request"]["dropped_signals"] and doc["request"]["budget_s"] == budget
    assert any(n.startswith("dropped ") and f"budget of {budget:g} s" in n
               for n in doc["notes"])
    # the tasks only a dropped signal needed are gone (the parent's clean timing stays while
    # exposed_latency, which derives from it, is kept)
    dropped = set(doc["request"]["dropped_signals"])
    actions = {t["action"] for t in doc["tasks"]}
    only = {"duration": {"proton_scopes", "proton_instr"},
            "exposed_latency": {"forced_wait", "derive_exposed_latency"}}
    for sig in dropped & set(only):
        assert not actions & only[sig], sig
    if {"inst_executed", "warp_stall_samples"} <= dropped:
        assert "ncu_source" not in actions
    assert sum(t["estimate"]["wall_s"] for t in doc["tasks"] if not t["reuse"]) <= budget


def test_a_failed_task_fails_the_command(observed: dict[str, Any], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(RECORDED / "model", bundle)
    shutil.rmtree(bundle / "ncu_source")  # no recording: that task fails
    region, argv = CASES["model"]
    monkeypatch.chdir(PROGRAMS / "model")
    monkeypatch.setenv("ARGUS_REPLAY", str(bundle))
    r = CliRunner().invoke(main, ["observe", "--region", region, "--signals", SIGNALS,
                                  "--store", str(tmp_path / "f.duckdb"), "--json",
                                  "--no-replay", "--", *argv])
    assert r.exit_code == 1
    rep = json.loads(r.stdout)
    assert rep["ok"] is False
    failed = {f["task"].split(".", 1)[1]: f for f in rep["failed"]}
    assert set(failed) == {"ncu_source", "attribute"}
    assert "no recording of task ncu_source" in failed["ncu_source"]["error"]
    # what still ran is stored and named
    assert rep["evidence"]["exposed_latency"] == {"derived": 1}
