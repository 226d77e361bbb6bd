"""A region's own duration in an unmodified program: Proton scopes in the command form.

``argus observe --region R --signals duration -- COMMAND`` plans a ``proton_scopes`` variant of
the kernel's module and a ``proton_instr`` run: the program runs unmodified with the variant in
place of its kernel, and the hooks (``proton`` mode) open a Proton instrumentation session
around the variant's checked launch only, so one launch is instrumented and its result is
compared with the parent's on the same inputs. Recorded on the H200
(``tools/h200/observe_programs.sh .whl OUT tools/h200/programs_proton.txt``): the SwiGLU
``load`` region of a CUDA-graph decode loop (``tests/data/programs/graphed``; the instrumented
launch runs before the capture) and the main loop of a TMA GEMM (``tests/data/programs/tma``),
in ``tests/data/gpu/programs/{graphed,tma}/proton_instr``.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.runner.replay import PROGRAMS, RECORDED, replay_observe


def _events(name: str) -> list[dict[str, Any]]:
    """The recorded trace's scope events, read here with json (not argusdb's reader)."""
    path = RECORDED / name / "proton_instr" / "instr.chrome_trace.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def _replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, region: str,
            *cmd: str) -> tuple[int, dict[str, Any]]:
    """``argus observe --region REGION --signals duration -- CMD`` of a recorded program."""
    return replay_observe(tmp_path, monkeypatch, name, region, "duration", *cmd)


def _observe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, region: str,
             *cmd: str) -> tuple[dict[str, Any], Store]:
    code, rep = _replay(tmp_path, monkeypatch, name, region, *cmd)
    assert code == 0 and rep["ok"], rep
    return rep, open_store(tmp_path / "s.duckdb", read_only=True)


def _refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, region: str,
             *cmd: str) -> str:
    """The error of the one failed task (proton_instr), once nothing of it was stored."""
    code, rep = _replay(tmp_path, monkeypatch, name, region, *cmd)
    assert code == 1 and not rep["ok"]
    (failed,) = rep["failed"]
    assert failed["action"] == "proton_instr"
    with open_store(tmp_path / "s.duckdb", read_only=True) as st:
        assert st.rows("SELECT count(*) AS n FROM evidence WHERE signal = 'scope_cycles'") == [
            {"n": 0}]
    return str(failed["error"])


def test_the_plan_times_a_region_through_proton_scopes() -> None:
    r = CliRunner().invoke(main, [
        "observe", "--region", "swiglu/swiglu_kernel/act", "--signals", "duration",
        "--scope", "warp=each", "--program", str(PROGRAMS / "graphed" / "swiglu.py"),
        "--dry-run", "--json", "--", "python3", str(PROGRAMS / "graphed" / "decode.py")])
    plan = json.loads(r.stdout)
    assert r.exit_code == 0, plan
    assert [t["action"] for t in plan["tasks"]] == [
        "find_launch", "proton_scopes", "cupti_timing", "proton_instr"]
    instr = plan["tasks"][3]
    assert instr["params"]["scope"]["warp"] == "each"
    assert instr["depends_on"] == [plan["tasks"][0]["id"], plan["tasks"][1]["id"]]
    # no note that the command form cannot time a region any more
    assert not [n for n in plan["notes"] if "Proton" in n]


@pytest.mark.parametrize(("name", "region", "cmd", "ctas", "warps"), [
    ("graphed", "swiglu/swiglu_kernel/load", ["python3", "decode.py"], 256, 4),
    ("tma", "matmul_tma/matmul_tma_kernel/mainloop", ["python3", "bench.py"], 1024, 8),
])
def test_replayed_region_cycles_per_cta_and_warp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, region: str,
        cmd: list[str], ctas: int, warps: int) -> None:
    rep, st = _observe(tmp_path, monkeypatch, name, region, *cmd)
    events = _events(name)
    assert rep["evidence"]["scope_cycles"] == {"observed": len(events),
                                               "attributed": len(events)}
    with st:
        rows = st.rows(
            "SELECT e.region_id, count(*) AS n, count(DISTINCT e.cta) AS ctas, "
            "count(DISTINCT e.warp) AS warps, sum(e.value) AS cycles, "
            "any_value(r.instrumentation) AS instrumented, "
            "any_value(v.transform) AS transform "
            "FROM evidence e JOIN run r USING (run_id) "
            "JOIN program_version v ON v.program_version = e.program_version "
            "WHERE e.signal = 'scope_cycles' AND e.evidence_class = 'attributed' GROUP BY ALL")
        (check,) = st.rows("SELECT rel_err, passed FROM variant_check")
    (row,) = rows
    # every CTA of the one instrumented launch, each warp's cycles in the region
    assert (row["region_id"], row["n"], row["ctas"], row["warps"]) == (
        region, len(events), ctas, warps)
    freq = Counter(e["args"]["Frequency (MHz)"] for e in events)
    (mhz,) = freq
    assert row["cycles"] == pytest.approx(sum(e["dur"] for e in events) * mhz)
    assert row["instrumented"] is True
    assert row["transform"] == f"proton_scopes:{region}"
    assert check == {"rel_err": 0.0, "passed": True}


def test_a_recording_of_another_variant_is_not_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The graphed recording instrumented ``load``; a request for ``act`` plans another
    proton_scopes variant, so its recorded task is refused, not ingested under the wrong
    version."""
    error = _refused(tmp_path, monkeypatch, "graphed", "swiglu/swiglu_kernel/act", "python3",
                     "decode.py")
    assert "ran another variant" in error


def test_a_warp_specialized_loop_is_not_timed_by_its_default_partition(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tests/data/programs/wspec``: a GEMM whose K loop is ``tl.range(...,
    warp_specialize=True)``. The instrumented binary has 12 warps, but only warps 0-3 (the
    default partition) entered the ``mainloop`` scopes, which then span 46 cycles of a 4096^3
    GEMM: the loop ran in the other partitions. The task is refused and nothing of it stored."""
    events = _events("wspec")
    assert {e["tid"].split()[1] for e in events} == {"0", "1", "2", "3"}
    launch = json.loads(next((RECORDED / "wspec" / "proton_instr").glob("launch.*.json"))
                        .read_text())
    assert launch["binaries"][launch["variant_check"]["variant_binary"]]["num_warps"] == 12
    error = _refused(tmp_path, monkeypatch, "wspec", "matmul_ws/matmul_ws_kernel/mainloop",
                     "python3", "bench.py")
    assert "4 of the instrumented binary's 12 warps (warps 0-3)" in error
    assert "warp_specialize" in error


@pytest.mark.parametrize(("name", "region", "cmd", "launches"), [
    ("model", "fused_norm/layernorm_fwd/load", ["python3", "model.py"], 20),
    ("tma", "matmul_tma/matmul_tma_kernel/mainloop", ["python3", "bench.py"], 5),
])
def test_replayed_pc_sampling_of_a_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           name: str, region: str, cmd: list[str],
                                           launches: int) -> None:
    """``NAME@proton`` in the command form: Proton's PC sampling of the program's own launches
    of the chosen binary, from the measured launch on (20 at most; the TMA program launches its
    kernel 10 times, so 5). The session starts inactive before the kernel's first launch: one
    started later maps no sample to a source line (seen on the H200). Every sample lands in a
    region: attributed = observed per signal (``tools/h200/programs_pcs.txt``)."""
    code, rep = replay_observe(tmp_path, monkeypatch, name, region,
                               "pc_samples@proton,stall_long_scoreboard@proton", *cmd)
    assert code == 0 and rep["ok"], rep
    assert [t["action"] for t in rep["tasks"]] == ["find_launch", "proton_pcsampling",
                                                   "attribute"]
    recorded = json.loads((RECORDED / name / "proton_pcsampling" / "result.json").read_text())
    assert recorded["launches_sampled"] == launches
    tree = json.loads((RECORDED / name / "proton_pcsampling" / "pcs.hatchet").read_text())[0]

    def total(node: dict[str, Any], kernel: str, inside: bool = False) -> int:
        here = inside or node["frame"].get("name") == kernel
        own = int(node["metrics"].get("num_samples", 0)) if here and not node.get(
            "children") else 0
        return own + sum(total(c, kernel, here) for c in node.get("children", []))

    kernel = region.split("/")[1]
    for sig in ("pc_samples", "stall_long_scoreboard"):
        v = rep["attribution"][sig]
        assert v["verdict"] == "sufficient" and v["attributed"] == v["observed"] > 0, sig
    # the samples of the kernel's source lines in the recorded tree, summed here
    assert rep["attribution"]["pc_samples"]["observed"] == total(tree, kernel)
