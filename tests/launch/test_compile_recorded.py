"""The user's kernel inside torch.compile as the H200 recorded it (``tests/data/gpu/compile``).

Recorded by ``tools/h200/observe_compile.sh`` (2026-12-03, torch 2.11.0+cu130, Triton 3.6.0):
``tests/data/programs/compiled_mlp`` observed compiled (``compiled/find_launch``), eagerly
with ``TORCHDYNAMO_DISABLE=1`` (``eager/``, every task) and with its autotuned GELU
(``tuned/find_launch``). The compiled control runs saw every launch of the user's kernel and
captured the measured one; they then failed at ingestion: the SASS of a binary that torch's
CUDA 13.0 ptxas assembled has a ``.target sm_90`` header, which the listing reader did not
know. These tests replay what the runs wrote, with the fixes since.
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
PROGRAM = ROOT / "tests" / "data" / "programs" / "compiled_mlp"
COMPILED = "60af281216e719c1dc5e41b3eb5cf399bac657873072c8cae8e195d449311a37"
EAGER = "5a4e92fc27236d6b3e9f4d340ac9de741ad13566bf8401c1a14a47456a45c49e"


def _doc(run: str) -> dict[str, Any]:
    return dict(json.loads(next((REC / run / "find_launch").glob("launch.*.json")).read_text()))


def test_the_compiled_program_launched_the_users_kernel_as_inductor_made_it() -> None:
    doc = _doc("compiled")
    assert len(doc["launches"]) == 20
    assert {(x["role"], x["launcher"], x["binary"]) for x in doc["launches"]} == {
        ("program", "inductor", COMPILED)}
    ind = doc["inductor"]
    assert {k: v["launches"] for k, v in ind["neighbours"].items()} == {
        "triton_per_fused_native_layer_norm_0": 20, "triton_poi_fused_add_1": 221}
    assert all(v["kind"] == "inductor" for v in ind["neighbours"].values())
    assert ind["copies"][COMPILED]["line_map"] == {"first": 18, "last": 28, "offset": -10}
    assert ind["inlined_into"] == [] and ind["modified"] == []
    b = doc["binaries"][COMPILED]
    assert b["constexprs"] == {"BLOCK": 1024} and (b["num_warps"], b["num_stages"]) == (4, 3)
    assert b["options"]["debug"] is True and b["options"]["sanitize_overflow"] is False
    assert doc["module_file"] == "/tmp/progs_compile/gelu.py"
    assert doc["capture"] == {"ok": True, "launch": 5, "bytes": 67108864, "folder": "capture",
                              "storages": 2}
    found = discovery(doc, 5)
    assert found["measured_launch"] == 5 and found["binary"]["launcher"] == "inductor"


def test_inductors_recorded_copy_is_the_users_source_and_maps_line_for_line() -> None:
    copy = (REC / "compiled" / "find_launch" / f"inductor_kernel.{COMPILED}.py").read_text()
    user = (PROGRAM / "gelu.py").read_text()
    m = re.search(r"^def gelu_kernel\(.*?(?=^\S|\Z)", copy, re.MULTILINE | re.DOTALL)
    u = re.search(r"^def gelu_kernel\(.*?(?=^\S|\Z)", user, re.MULTILINE | re.DOTALL)
    assert m is not None and u is not None
    assert inductor.classify("gelu_kernel", m.group(0), "/c/copy.py", "gelu_kernel",
                             u.group(0), "/u/gelu.py") == "user"
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
    program used (recorded since in the binary's ``ptxas``)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    from argusdb.observe.runner.replay import load_kernel

    cap = json.loads((REC / "compiled" / "find_launch" / "capture" / "launch.json").read_text())
    opts = {k: v["value"] for k, v in cap["kwargs"].items() if k != "BLOCK"}
    jit = load_kernel(str(PROGRAM / "gelu.py"), "gelu_kernel", "argus_test_gelu")
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


def test_the_autotuned_gelu_under_compile_splits_benchmarks_from_the_programs_launches(
        ) -> None:
    doc = _doc("tuned")
    roles: dict[tuple[str, str], int] = {}
    for x in doc["launches"]:
        roles[(x["role"], x["binary"])] = roles.get((x["role"], x["binary"]), 0) + 1
    chosen = doc["chosen_binary"]
    assert roles[("program", chosen)] == 20
    bench = {b: n for (r, b), n in roles.items() if r == "autotune"}
    assert len(bench) == 3 and set(bench.values()) == {106} and chosen in bench
    assert doc["binaries"][chosen]["constexprs"] == {"BLOCK": 2048}
    found = discovery(doc, 5)
    assert found["launches"]["autotune"] == 318 and found["measured_launch"] > 318 - 1


def test_in_context_durations_of_the_two_versions() -> None:
    def durs(path: Path) -> list[float]:
        op = gzip.open if path.suffix == ".gz" else open
        with op(path, "rt") as fh:
            return sorted((r["end"] - r["start"]) / 1000 for r in map(json.loads, fh)
                          if r.get("kind") == "CONCURRENT_KERNEL"
                          and r.get("name") == "gelu_kernel")
    c = durs(next((REC / "compiled" / "find_launch").glob("timing.*.cupti.jsonl.gz")))
    e = durs(next((REC / "eager" / "find_launch").glob("timing.*.cupti.jsonl")))
    assert len(c) == len(e) == 14  # 20 launches less 5 of warm-up and the captured one
    assert 16.0 < c[7] < 17.5 and 16.0 < e[7] < 17.5


def test_the_compiled_binarys_artefacts_ingest_under_the_users_source(tmp_path: Path) -> None:
    """What failed on the H200: the control task's ingestion of the compiled binary's SASS."""
    from click.testing import CliRunner

    from argusdb.cli import main

    folder = REC / "compiled" / "find_launch"
    files = [str(next(folder.glob(f"binary.*.{ext}"))) for ext in ("sass", "ttgir")]
    store = str(tmp_path / "s.duckdb")
    r = CliRunner().invoke(main, ["ingest", store, *files, "--program",
                                  str(PROGRAM / "gelu.py"), "--json"])
    assert r.exit_code == 0, r.output
    runs = json.loads(r.stdout.splitlines()[-1])["runs"]
    assert [x["kind"] for x in runs] == ["nvdisasm.sass", "triton.ttgir"]
    assert runs[0]["rows"] == {"instruction": 176}
    assert len({x["program_version"] for x in runs}) == 1
