"""The compiled program and its eager run, replayed from the H200's task folders into one store.

``tools/h200/observe_compile.sh`` observed ``tests/data/programs/compiled_mlp`` from a wheel,
``argus observe --region gelu/gelu_kernel/load --signals
duration,inst_executed,warp_stall_samples,exposed_latency -- python3 mlp.py`` and the same with
``env TORCHDYNAMO_DISABLE=1``; every task's folder is in ``tests/data/gpu/compile/{compiled,
eager}``. Here both commands run again with ``ARGUS_REPLAY`` naming those folders, compiled
first as on the H200, into one store: the plan, the program versions from the binaries found,
ingestion of their TTGIR and SASS, attribution, derivation and the refused reuse run for real,
then ``argus diff`` between the two binaries (about 30 s of CPU for the two observes and two
diffs: the end-to-end replay of the pair; one module fixture serves every test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.store import open_store

ROOT = Path(__file__).resolve().parents[2]
REC = ROOT / "tests" / "data" / "gpu" / "compile"
PROGRAM = ROOT / "tests" / "data" / "programs" / "compiled_mlp"
REGION = "gelu/gelu_kernel/load"
SIGNALS = "duration,inst_executed,warp_stall_samples,exposed_latency"
COMPILED = "60af281216e719c1dc5e41b3eb5cf399bac657873072c8cae8e195d449311a37"
EAGER = "5a4e92fc27236d6b3e9f4d340ac9de741ad13566bf8401c1a14a47456a45c49e"
COMMANDS = {"compiled": ["python3", "mlp.py"],
            "eager": ["env", "TORCHDYNAMO_DISABLE=1", "python3", "mlp.py"]}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("compile") / "s.duckdb"
    reports = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(PROGRAM)
        for name, command in COMMANDS.items():
            mp.setenv("ARGUS_REPLAY", str(REC / name))
            r = CliRunner().invoke(main, ["observe", "--region", REGION, "--signals", SIGNALS,
                                          "--store", str(store), "--json", "--", *command])
            assert r.exit_code == 0, r.output
            reports[name] = json.loads(r.stdout.splitlines()[-1])
    diff = {region: CliRunner().invoke(main, [
        "diff", str(store), "--region", region, "--from", f"binary={EAGER}", "--to",
        f"binary={COMPILED}", *(x for s in signals for x in ("--signal", s))])
        for region, signals in ((REGION, ("inst_executed", "warp_stall_samples",
                                          "exposed_latency")),
                                ("gelu/gelu_kernel", ("duration",)))}
    return {"store": store, "reports": reports, "diff": diff}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_program_runs_once_and_every_signal_is_answered(replayed: dict[str, Any],
                                                            name: str) -> None:
    rep = replayed["reports"][name]
    assert rep["ok"] and rep["failed"] == []
    assert [t["status"] for t in rep["tasks"]] == ["done"] * 10
    assert rep["replay"]["program_runs"] == 1 and rep["replay"]["fallbacks"] == {}
    ev = rep["evidence"]
    assert ev["exposed_latency"] == {"derived": 1} and ev["duration"]["observed"] > 0
    assert ev["scope_cycles"]["attributed"] == ev["scope_cycles"]["observed"] > 0


@pytest.mark.parametrize(("name", "samples"), [("compiled", 1848), ("eager", 1824)])
def test_attributed_equals_observed_with_nothing_unattributed(replayed: dict[str, Any],
                                                              name: str, samples: int) -> None:
    att = replayed["reports"][name]["attribution"]
    assert att["inst_executed"] == {"observed": 10485760.0, "attributed": 10485760.0,
                                    "unattributed_share": 0.0, "verdict": "sufficient"}
    assert att["warp_stall_samples"] == {"observed": float(samples),
                                         "attributed": float(samples),
                                         "unattributed_share": 0.0, "verdict": "sufficient"}


def test_the_eager_run_refuses_the_compiled_versions_runs_planned_for_reuse(
        replayed: dict[str, Any]) -> None:
    """Same source text, so the plan proposes the compiled version's runs; the control task
    then finds the eager binary, the runner refuses them, and the report counts only the
    eager run's own evidence (its totals above are one launch, not two versions summed)."""
    tasks = {t["id"].split(".", 1)[1]: t for t in replayed["reports"]["eager"]["tasks"]}
    refused = {k for k, t in tasks.items() if t.get("reuse_refused")}
    assert refused == {"cupti_timing.parent", "cupti_timing.parent_replay", "ncu_source",
                       "proton_instr", "cupti_timing.forced_wait"}
    assert all(tasks[k]["reuse"] is None for k in refused)
    assert "45801996f1c9958b" in tasks["ncu_source"]["reuse_refused"]


def test_two_binaries_of_one_source_are_two_versions(replayed: dict[str, Any]) -> None:
    with open_store(replayed["store"], read_only=True) as st:
        rows = st.rows("SELECT program_version, source_sha256, options FROM program_version "
                       "WHERE transform IS NULL AND source_name = 'gelu.py' "
                       "ORDER BY program_version")
        timeline = {r["program_version"]: r["names"] for r in st.rows(
            "SELECT json_extract_string(p.options, '$.kernels_of') AS program_version, "
            "list(DISTINCT k.kernel ORDER BY k.kernel) AS names FROM kernel_launch k "
            "JOIN run r USING (run_id) JOIN program_version p USING (program_version) "
            "WHERE p.options LIKE '%kernels_of%' GROUP BY ALL")}
    assert len({r["source_sha256"] for r in rows}) == 1
    binaries = {r["program_version"]: json.loads(r["options"])["binary"] for r in rows}
    assert binaries == {"45801996f1c9958b": COMPILED, "f2e1eb910218b0ca": EAGER}
    # Inductor's fused neighbours are the compiled program's timeline, named as Inductor made
    # them; the eager run has ATen's kernels there instead
    fused = {"triton_per_fused_native_layer_norm_0", "triton_poi_fused_add_1"}
    assert fused <= set(timeline["45801996f1c9958b"])
    assert not fused & set(timeline["f2e1eb910218b0ca"])


def _table(r: Any) -> dict[str, list[str]]:
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].split()[0] == "signal" and {"from", "to", "ratio"} <= set(lines[0].split())
    return {" ".join(ln.split()[:3]) if ln.startswith("duration") else ln.split()[0]: ln.split()
            for ln in lines[1:] if ln}


def test_diff_compares_the_compiled_binary_with_the_eager_one(replayed: dict[str, Any]) -> None:
    """The region's three asked signals, per launch: one machine code, the same instructions
    and about the same stalls; the header names the two binaries and their versions."""
    r = replayed["diff"][REGION]
    rows = _table(r)
    assert set(rows) == {"inst_executed", "warp_stall_samples", "exposed_latency"}
    assert rows["inst_executed"][1:6] == ["917.5", "k", "count", "917.5", "k"]
    assert rows["warp_stall_samples"][1:5] == ["1,205", "samples", "1,194", "samples"]
    assert rows["exposed_latency"][1:5] == ["240.5", "ns", "239.5", "ns"]
    assert (f"region {REGION}: binary={EAGER} (f2e1eb910218b0ca) -> binary={COMPILED} "
            f"(45801996f1c9958b)") in r.output.splitlines()


def test_diff_of_the_kernels_duration_finds_the_compiled_launches_slower(
        replayed: dict[str, Any]) -> None:
    """The in-context duration (the programs' own 14 launches each, clean CUPTI timing): the
    compiled binary runs 1.47 % longer, outside the 1 % noise floor; the replays of the
    captured launch (21 each) and the profiled one are their own cohorts, not significant."""
    rows = _table(replayed["diff"]["gelu/gelu_kernel"])
    clean = rows["duration observed, clean"]
    assert clean[3:9] == ["16.27", "µs", "16.51", "µs", "1.0147", "[1.0049,"]
    assert clean[-5:] == ["14/14", "higher", "by", "1.47", "%"]
    replay = rows["duration observed, launch_replay+activity_tracing+cache:all"]
    assert replay[-6:] == ["21/21", "not", "significant:", "p=0.384", ">=", "0.05"]
