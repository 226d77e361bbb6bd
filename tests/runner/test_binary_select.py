"""A program that launches its kernel as several binaries (here: RMSNorm at two widths, so
two BLOCK constexprs), and ``--option`` picking which one ``observe`` measures.

``tests/data/programs/pkgrms`` is an ordinary package-layout program (the kernel in
``mlp/ops/rms.py`` calls a ``@triton.jit`` helper of a sibling module). Its observation on the
H200 (``tools/h200/observe_programs.sh .whl OUT tools/h200/programs_pkg.txt``) is in
``tests/data/gpu/programs/pkgrms/``; the control run's launch record there holds 25 launches of
two binaries. The replay here recomputes the control task's result from that record with this
code (:func:`argusdb.observe.runner.command.discovery`), so the report's note is this code's.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.observe.launch.hooks import State, binary_matches, interpreter_key
from argusdb.observe.runner.backends import Job
from argusdb.observe.runner.command import (
    CommandBackend,
    CommandFailed,
    describe_binaries,
    discovery,
    program_binaries,
)
from argusdb.store import open_store
from tools.h200.program_figures import figures

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "tests" / "data" / "programs" / "pkgrms"
RECORDED = ROOT / "tests" / "data" / "gpu" / "programs" / "pkgrms"
LAUNCH = json.loads(next((RECORDED / "find_launch").glob("launch.*.json")).read_text())
WIDE = "0cd24a42112edf4e25e1f6749d8150323dcaf335c6106d19bac333f195d033e9"   # BLOCK 4096
NARROW = "a0eea5e6ca58448ec0b996696cd781bd68347928a482de0949e56b74ecf9025a"  # BLOCK 1024


def test_the_recorded_program_launched_two_binaries() -> None:
    bins = program_binaries(LAUNCH)
    assert [(b["hash"], b["launches"], b["constexprs"]) for b in bins] == [
        (NARROW, 13, {"BLOCK": 1024}), (WIDE, 12, {"BLOCK": 4096})]
    text = describe_binaries(bins)
    # only the keys that tell them apart, with a hash prefix each
    assert text == (f"2 binaries: binary={NARROW[:12]} constexpr.BLOCK=1024 (13 launches); "
                    f"binary={WIDE[:12]} constexpr.BLOCK=4096 (12 launches)")


def _chosen(select: dict[str, str]) -> str | None:
    st = State({"kernel": "rms_kernel", "program": "rms", "out": "/nonexistent",
                "select": select})
    st.launches, st.binaries = LAUNCH["launches"], LAUNCH["binaries"]
    return st.chosen()


def test_select_picks_the_last_matching_binary_of_the_program() -> None:
    assert _chosen({}) == NARROW  # the program's last launch (its own check at width 1024)
    assert _chosen({"constexpr.BLOCK": "4096"}) == WIDE
    assert _chosen({"binary": WIDE[:8]}) == WIDE
    assert _chosen({"num_warps": "4", "constexpr.BLOCK": "1024"}) == NARROW
    assert _chosen({"constexpr.BLOCK": "2048"}) is None
    assert _chosen({"num_warps": "8"}) is None
    assert not binary_matches(LAUNCH["binaries"][WIDE], {"constexpr.NOPE": "1"})


def test_discovery_measures_the_selected_binary_after_its_warmup() -> None:
    wide = LAUNCH | {"chosen_binary": WIDE}
    d = discovery(wide, 5, {"constexpr.BLOCK": "4096"})
    assert d["binary"]["hash"] == WIDE and d["launches"]["of_binary"] == 12
    prog = [x for x in LAUNCH["launches"] if x["role"] == "program"]
    # ncu skips every launch of the kernel before the 6th launch of the wide binary
    sixth = [i for i, x in enumerate(prog) if x["binary"] == WIDE][5]
    assert d["ncu_launch_skip"] == sixth and d["measure_index"] == 5
    assert d["selected_by"] == "--option constexpr.BLOCK=4096"
    assert discovery(LAUNCH, 5)["selected_by"] == "the program's last launch of the kernel"


def _bundle(tmp_path: Path) -> Path:
    """The recording with the control task's result recomputed by this code."""
    bundle = tmp_path / "bundle"
    shutil.copytree(RECORDED, bundle)
    res_path = bundle / "find_launch" / "result.json"
    old = json.loads(res_path.read_text())
    new = discovery(LAUNCH, 5) | {k: old[k] for k in ("gpu_s", "module_sha256", "files",
                                                       "kept_files")}
    assert new["binary"] == old["binary"] and new["ncu_launch_skip"] == old["ncu_launch_skip"]
    res_path.write_text(json.dumps(new))
    return bundle


def _observe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, region: str, signals: str,
             *extra: str) -> tuple[int, dict[str, Any]]:
    monkeypatch.chdir(PKG)
    monkeypatch.setenv("ARGUS_REPLAY", str(_bundle(tmp_path)))
    r = CliRunner().invoke(main, ["observe", "--region", region, "--signals", signals,
                                  "--store", str(tmp_path / "s.duckdb"), "--json",
                                  "--no-replay", *extra, "--", "python3", "train.py"])
    return r.exit_code, json.loads(r.stdout.splitlines()[-1])


def test_replayed_observation_is_exact_and_names_the_binaries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, rep = _observe(tmp_path, monkeypatch, "rms/rms_kernel/load",
                         "duration,inst_executed,warp_stall_samples,exposed_latency")
    assert code == 0 and rep["ok"], rep["failed"]
    assert [t["status"] for t in rep["tasks"]] == ["done"] * 9  # with proton_instr
    for sig in ("inst_executed", "warp_stall_samples"):
        v = rep["attribution"][sig]
        assert v["verdict"] == "sufficient" and v["attributed"] == v["observed"] > 0
    (note,) = [n for n in rep["notes"] if "launched 2 binaries" in n]
    assert f"Measured binary={NARROW[:12]}, picked by the program's last launch" in note
    assert "constexpr.BLOCK=4096 (12 launches)" in note
    with open_store(tmp_path / "s.duckdb", read_only=True) as st:
        (opts,) = st.rows("SELECT options FROM program_version WHERE program = 'rms' AND "
                          "parent_version IS NULL")
        assert json.loads(opts["options"])["constexpr.BLOCK"] == "1024"
        # mean_square (mlp/ops/_jit.py) is inlined into the kernel: its instructions carry
        # the call site in the 'stats' region, so every one of them has a region
        by_region = {r["region_id"]: r["v"] for r in st.rows(
            "SELECT region_id, sum(value) AS v FROM evidence WHERE signal = 'inst_executed' "
            "AND evidence_class = 'attributed' GROUP BY ALL")}
        figs = figures(st, "rms/rms_kernel/load")
    assert "rms/rms_kernel/_unattributed" not in by_region
    assert by_region["rms/rms_kernel/stats"] > 0
    assert {(x["file"], x["line"]) for x in figs["library_lines"]} == {
        ("_jit.py", 8), ("standard.py", 263), ("standard.py", 293)}
    assert all(x["regions"] == ["rms/rms_kernel/stats"] for x in figs["library_lines"])


def test_the_command_form_refuses_options_it_cannot_apply(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.chdir(PKG)
    base = ["observe", "--region", "rms/rms_kernel/load", "--signals", "inst_executed",
            "--dry-run", "--json"]
    r = CliRunner().invoke(main, [*base, "--option", "BLOCK=4096", "--", "python3",
                                  "train.py"])
    assert r.exit_code == 2 and "BLOCK cannot be set from outside" in r.output
    assert "constexpr.NAME" in r.output
    r = CliRunner().invoke(main, [*base, "--option", "constexpr.BLOCK=4096", "--", "python3",
                                  "train.py"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["tasks"][0]["params"]["select"] == {"constexpr.BLOCK": "4096"}
    assert doc["request"]["select"] == {"constexpr.BLOCK": "4096"}


def test_interpreter_launches_of_other_constexprs_are_other_binaries() -> None:
    assert interpreter_key({"constexprs": {"BLOCK": 64}, "num_warps": 4}) == \
        "interpreter:BLOCK=64,num_warps=4"
    assert interpreter_key({"constexprs": {}, "num_warps": None}) == "interpreter"


@pytest.mark.parametrize("select, expect", [({"constexpr.BLOCK": "4096"}, 4096),
                                            ({"constexpr.BLOCK": "2048"}, None)])
def test_control_run_selects_or_names_the_binaries(tmp_path: Path, monkeypatch:
                                                   pytest.MonkeyPatch, select: dict[str, str],
                                                   expect: int | None) -> None:
    """The real control run on the CPU (interpreter): the program at two widths."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    job = Job("find_launch", ProgramSource.from_path(PKG / "mlp" / "ops" / "rms.py"), None,
              None, "command", {}, {"kernel": "rms_kernel", "program": "rms",
                                    "launches_warmup": 5, "select": select},
              tmp_path / "find_launch")
    backend = CommandBackend([sys.executable, "train.py", "1", "4"], PKG)
    if expect is None:
        with pytest.raises(CommandFailed, match=r"launched no binary of rms_kernel that "
                           r"matches constexpr\.BLOCK=2048; it launched 2 binaries: .*"
                           r"constexpr\.BLOCK=1024 \(3 launches\).*constexpr\.BLOCK=4096 "
                           r"\(2 launches\)"):
            backend.run(job)
        return
    d = backend.run(job).detail
    assert d["binary"]["constexprs"] == {"BLOCK": expect}
    assert d["selected_by"] == "--option constexpr.BLOCK=4096"
    # one step: 2 layers x (width 1024, width 3072), then the program's check at 1024
    assert [b["launches"] for b in d["program_binaries"]] == [3, 2]


def test_binaries_told_apart_by_argument_specialization(tmp_path: Path) -> None:
    """``tests/data/programs/varlen`` launches its softmax at 1000 and 1024 columns: one BLOCK,
    one num_warps, two binaries (Triton assumes ``n_cols`` divisible by 16 in the second). On
    the H200 the note could only name them by hash; the specialization read from the compiled
    kernels (compiled here for sm_90 as the JIT specializes those launches) tells them apart
    and picks one."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from argusdb.observe.launch.hooks import binary_info
    from argusdb.observe.planner.build import binary_select
    from tests.transforms.kernels import load

    src = ROOT / "tests" / "data" / "programs" / "varlen" / "softmax_var.py"
    jit = load(src.read_text(), "softmax_var_spec", tmp_path).softmax_kernel
    sig = {"x_ptr": "*fp16", "y_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"}
    aligned = [["tt.divisibility", 16]]
    infos = []
    for attrs in ({(0,): aligned, (1,): aligned}, {(0,): aligned, (1,): aligned, (2,): aligned}):
        kernel = triton.compile(ASTSource(jit, signature=sig, constexprs={"BLOCK": 1024},
                                          attrs=attrs),
                                target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        infos.append(binary_info(jit, kernel, (), {"num_warps": 4}, {"BLOCK": 1024}))
    odd, even = infos
    assert odd["args"] == {"x_ptr": "*fp16:div16", "y_ptr": "*fp32:div16", "n_cols": "i32"}
    assert even["args"]["n_cols"] == "i32:div16" and odd["hash"] != even["hash"]
    doc = {"launches": [{"role": "program", "binary": odd["hash"]},
                        {"role": "program", "binary": even["hash"]}],
           "binaries": {odd["hash"]: odd, even["hash"]: even}}
    text = describe_binaries(program_binaries(doc))
    # only what differs: the length's specialization, not BLOCK, warps or the pointers
    assert text == (f"2 binaries: binary={odd['hash'][:12]} arg.n_cols=i32 (1 launch); "
                    f"binary={even['hash'][:12]} arg.n_cols=i32:div16 (1 launch)")
    select = binary_select({"arg.n_cols": "i32:div16"})
    assert binary_matches(even, select) and not binary_matches(odd, select)
