"""The user's kernel inside torch.compile as the H200 recorded it (``tests/data/gpu/compile``).

Recorded by ``tools/h200/observe_compile.sh`` (2026-12-03, torch 2.11.0+cu130, Triton 3.6.0,
argusdb from a wheel): ``tests/data/programs/compiled_mlp`` observed compiled (``compiled/``)
and with ``TORCHDYNAMO_DISABLE=1`` (``eager/``), and ``tests/data/programs/compiled_tuned``, a
model compiled whole whose SwiGLU kernel autotunes, the same two ways (``tuned/``,
``tuned_eager/``); each folder holds every task of the run. These tests read the control
tasks' records: the launches, Inductor's generated code, the binaries and their listings.
``test_compile_replayed.py`` replays the whole runs.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from argusdb.collectors.nvdisasm.listing import SassListingReader
from argusdb.observe.launch import inductor
from argusdb.observe.runner.command import discovery

ROOT = Path(__file__).resolve().parents[2]
REC = ROOT / "tests" / "data" / "gpu" / "compile"
PROGRAMS = ROOT / "tests" / "data" / "programs"
COMPILED = "60af281216e719c1dc5e41b3eb5cf399bac657873072c8cae8e195d449311a37"
EAGER = "5a4e92fc27236d6b3e9f4d340ac9de741ad13566bf8401c1a14a47456a45c49e"
TUNED = "6c5e5f7433c14787c8ffc2f1009f40b82d6bdd8dc8a2a71176189fd2ca94aeb1"
TUNED_EAGER = "1d3d1595a86bc69baeeb9ded8e0d7e4929846d09610e51265e77fbdaa797e6d6"


def _doc(run: str) -> dict[str, Any]:
    return dict(json.loads(next((REC / run / "find_launch").glob("launch.*.json")).read_text()))


def _function(text: str, name: str) -> str:
    m = re.search(rf"^def {name}\(.*?(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    assert m is not None, name
    return m.group(0)


def test_the_compiled_program_launched_the_users_kernel_as_inductor_made_it() -> None:
    doc = _doc("compiled")
    assert len(doc["launches"]) == 20
    assert {(x["role"], x["launcher"], x["binary"]) for x in doc["launches"]} == {
        ("program", "inductor", COMPILED)}
    ind = doc["inductor"]
    assert {k: v["launches"] for k, v in ind["neighbours"].items()} == {
        "triton_per_fused_native_layer_norm_0": 20, "triton_poi_fused_add_1": 232}
    assert all(v["kind"] == "inductor" for v in ind["neighbours"].values())
    assert ind["copies"][COMPILED]["line_map"] == {"first": 18, "last": 28, "offset": -10}
    assert ind["inlined_into"] == [] and ind["modified"] == []
    b = doc["binaries"][COMPILED]
    assert b["constexprs"] == {"BLOCK": 1024} and (b["num_warps"], b["num_stages"]) == (4, 3)
    assert b["options"]["debug"] is True and b["options"]["sanitize_overflow"] is False
    assert b["ptxas"].endswith("torch/bin/ptxas")  # Inductor hands Triton torch's CUDA 13 ptxas
    assert doc["module_file"] == "/tmp/progs_compile/gelu.py"
    assert doc["capture"] == {"ok": True, "launch": 5, "bytes": 67108864, "folder": "capture",
                              "storages": 2}
    found = discovery(doc, 5)
    assert found["measured_launch"] == 5 and found["binary"]["launcher"] == "inductor"


def test_inductors_wrapper_code_holds_the_users_kernel_and_the_fused_neighbours() -> None:
    """Inductor's generated wrapper (the one file of its cache kept): each kernel it compiles is
    an ``async_compile.triton(NAME, SOURCE)``; classified against the user's gelu.py, one is
    the user's kernel and the others are the neighbours the launch record counted."""
    wrapper = gzip.decompress(next((REC / "compiled" / "find_launch" / "inductor_cache")
                                   .glob("*/*.py.gz")).read_bytes()).decode()
    user = _function((PROGRAMS / "compiled_mlp" / "gelu.py").read_text(), "gelu_kernel")
    kinds = {}
    for var, name, src in re.findall(
            r"^(\w+) = async_compile\.triton\('(\w+)', '''(.*?)'''", wrapper, re.M | re.S):
        fn = re.search(r"^def (\w+)\(", src, re.M)
        assert fn is not None and fn.group(1) == name
        kinds[var] = inductor.classify(fn.group(1), _function(src, fn.group(1)), "/c/w.py",
                                       "gelu_kernel", user, "/u/gelu.py")
    assert kinds == {"gelu_kernel_0": "user", "triton_per_fused_native_layer_norm_0": "inductor",
                     "triton_poi_fused_add_1": "inductor"}
    assert {k for k, v in kinds.items() if v == "inductor"} == set(
        _doc("compiled")["inductor"]["neighbours"])


def test_inductors_recorded_copy_is_the_users_source_and_maps_line_for_line() -> None:
    copy = gzip.decompress((REC / "compiled" / "find_launch" /
                            f"inductor_kernel.{COMPILED}.py.gz").read_bytes()).decode()
    user = (PROGRAMS / "compiled_mlp" / "gelu.py").read_text()
    assert inductor.classify("gelu_kernel", _function(copy, "gelu_kernel"), "/c/copy.py",
                             "gelu_kernel", _function(user, "gelu_kernel"), "/u/gelu.py") == "user"
    cl, ul = copy.splitlines(), user.splitlines()
    for line in range(18, 29):  # the recorded line map: copy 18..28 -> user 8..18
        assert cl[line - 1] == ul[line - 10 - 1]
    assert "# region load" in cl[21 - 1]


def test_the_mapped_listing_reads_with_the_users_lines_and_matches_the_eager_binary() -> None:
    reader = SassListingReader()
    got = {}
    for run in ("compiled", "eager"):
        path = next((REC / run / "find_launch").glob("binary.*.sass"))
        assert reader.sniff(path, path.read_bytes()[:4096])
        art = reader.read(path)
        assert art.target == "sm_90" and art.kernels == ["gelu_kernel"]
        # the user's file, and Triton's standard.py where tl.sigmoid was inlined
        assert {r.file_name for r in art.source_refs} == {"gelu.py", "standard.py"}
        got[run] = [(b["sass"], b["source_file"], b["source_line"])
                    for _, batch in art.batches()
                    for b in batch.to_pylist()]
    assert _doc("compiled")["binaries"][COMPILED]["sass_info"]["sass_instructions"] == 176
    # the same 176 instructions at the same lines of gelu.py: two binaries, one machine code
    assert len(got["compiled"]) == 176 and got["compiled"] == got["eager"]


def test_production_ptx_differs_from_the_eager_binary_only_by_its_ptx_version() -> None:
    prod = (REC / "compiled" / "find_launch" / "capture" / "binary.ptx").read_text()
    mapped = next((REC / "compiled" / "find_launch").glob("binary.*.ptx")).read_text()
    eager = next((REC / "eager" / "find_launch").glob("binary.*.ptx")).read_text()
    assert '.file\t1 "/tmp/compile/' in prod and "/tmp/progs_compile/gelu.py" in mapped
    assert inductor.ptx_difference(prod, mapped) is None
    # Inductor hands Triton torch's CUDA 13.0 ptxas: PTX 9.0 against Triton's own 8.7
    assert inductor.ptx_difference(eager, prod) == "PTX line 1: '.version 8.7' vs '.version 9.0'"


def test_the_users_source_compiled_with_the_captured_options_is_the_production_code() -> None:
    """What the replay worker does before it stands a replay in for the production binary:
    compile gelu.py with the captured constexprs and options (here for sm_90 without a GPU);
    only the PTX version differs, which the replay removes by assembling with the ptxas the
    program used (the binary's ``ptxas``)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    from argusdb.observe.runner.replay import load_kernel

    cap = json.loads((REC / "compiled" / "find_launch" / "capture" / "launch.json").read_text())
    opts = {k: v["value"] for k, v in cap["kwargs"].items() if k != "BLOCK"}
    jit = load_kernel(str(PROGRAMS / "compiled_mlp" / "gelu.py"), "gelu_kernel",
                      "argus_test_gelu")
    div = [["tt.divisibility", 16]]
    src = ASTSource(jit, {"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"},
                    {"BLOCK": cap["kwargs"]["BLOCK"]["value"]},
                    attrs={(0,): div, (1,): div, (2,): div})
    try:
        k = compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
    except RuntimeError as exc:  # no ptxas in this Triton wheel
        pytest.skip(f"Triton cannot assemble for sm_90 here: {exc}")
    prod = (REC / "compiled" / "find_launch" / "capture" / "binary.ptx").read_text()
    assert k.hash != COMPILED  # the hash includes the function's first line (8, not 18)
    diff = inductor.ptx_difference(prod, k.asm["ptx"])
    assert diff is not None and diff.startswith("PTX line 1: '.version 9.0'")
    same = re.sub(r"^\.version .*$", "", k.asm["ptx"], count=1, flags=re.MULTILINE)
    assert inductor.ptx_difference(re.sub(r"^\.version .*$", "", prod, count=1,
                                          flags=re.MULTILINE), same) is None


def _roles(doc: dict[str, Any]) -> dict[tuple[str, str], int]:
    roles: dict[tuple[str, str], int] = {}
    for x in doc["launches"]:
        roles[(x["role"], x["binary"])] = roles.get((x["role"], x["binary"]), 0) + 1
    return roles


def test_the_compiled_models_autotuned_kernel_splits_benchmarks_from_its_launches() -> None:
    """compiled_tuned: Inductor benchmarks the three configs of swiglu_kernel when it compiles
    the model (106 launches each, Inductor's copies of swiglu.py), then the model's 20 launches
    run the chosen one; the eager run's autotuner picks another config, so the two versions
    differ in more than the launcher."""
    doc = _doc("tuned")
    roles = _roles(doc)
    assert doc["chosen_binary"] == TUNED and roles[("program", TUNED)] == 20
    bench = {b: n for (r, b), n in roles.items() if r == "autotune"}
    assert len(bench) == 3 and set(bench.values()) == {106} and TUNED in bench
    copies = doc["inductor"]["copies"]
    assert set(copies) == set(bench) and {c["name"] for c in copies.values()} == {"swiglu_kernel"}
    assert {json.dumps(c["line_map"]) for c in copies.values()} == {
        json.dumps({"first": 18, "last": 27, "offset": -7})}
    assert {k: v["launches"] for k, v in doc["inductor"]["neighbours"].items()} == {
        "triton_per_fused__fused_rms_norm_0": 20}
    assert sorted((b["constexprs"]["BLOCK"], b["num_warps"]) for b in doc["binaries"].values()
                  ) == [(512, 2), (1024, 4), (4096, 8)]
    assert doc["binaries"][TUNED]["constexprs"] == {"BLOCK": 4096}
    found = discovery(doc, 5)
    assert found["launches"]["autotune"] == 318 and found["measured_launch"] == 323
    eager = _doc("tuned_eager")
    assert eager["chosen_binary"] == TUNED_EAGER and _roles(eager)[("program", TUNED_EAGER)] == 20
    assert eager["binaries"][TUNED_EAGER]["constexprs"] == {"BLOCK": 512}
    assert eager["inductor"]["copies"] == {}


def _durations(path: Path, kernel: str) -> list[float]:
    with gzip.open(path, "rt") as fh:
        return sorted((r["end"] - r["start"]) / 1000 for r in map(json.loads, fh)
                      if r.get("kind") == "CONCURRENT_KERNEL" and r.get("name") == kernel)


@pytest.mark.parametrize(("run", "kernel", "low", "high"), [
    ("compiled", "gelu_kernel", 16.0, 17.0), ("eager", "gelu_kernel", 16.0, 17.0),
    ("tuned", "swiglu_kernel", 6.5, 7.3), ("tuned_eager", "swiglu_kernel", 8.0, 8.6)])
def test_in_context_durations_of_each_version(run: str, kernel: str, low: float,
                                              high: float) -> None:
    d = _durations(next((REC / run / "cupti_timing.parent").glob("timing.*.cupti.jsonl.gz")),
                   kernel)
    assert len(d) == 14  # 20 launches less 5 of warm-up and the captured one
    assert low < d[7] < high  # median: 16.51 / 16.27 us (gelu), 6.90 / 8.30 us (swiglu)
