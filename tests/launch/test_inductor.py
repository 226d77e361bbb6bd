"""The user's kernel among a torch.compile program's launches, on a CPU.

Inductor's copy of a user kernel is made here by Inductor's own function
(``user_defined_triton_kernel_transitive_closure_source_code``, as its wrapper codegen calls it)
and written below other lines, as Inductor's cache files hold it; the JIT functions are real
Triton ``JITFunction`` objects loaded from those files. What needs a GPU (Inductor compiling and
launching) is replayed from the H200 recording in ``test_compile_recorded.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from argusdb.observe.launch import inductor
from argusdb.observe.launch.compiled import unseen_reason

pytest.importorskip("torch")
pytest.importorskip("triton")

PROGRAM = Path(__file__).resolve().parents[1] / "data" / "programs" / "compiled_mlp"


def _load(path: Path, kernel: str, name: str) -> Any:
    from argusdb.observe.runner.replay import load_kernel

    return load_kernel(str(path), kernel, name)


def _copy_file(tmp_path: Path, user: Any, header: int = 9, extra: str = "") -> Path:
    """Inductor's kernel file: its imports and decorators, then its copy of the source."""
    from torch._inductor.codegen.wrapper import (
        user_defined_triton_kernel_transitive_closure_source_code,
    )

    src = user_defined_triton_kernel_transitive_closure_source_code(user)
    lines = ["import triton", "import triton.language as tl", ""]
    lines += [f"# generated line {i}" for i in range(header)]
    lines += ["@triton.jit"]
    path = tmp_path / "cabc123.py"
    path.write_text("\n".join(lines) + "\n" + src.replace("    # region math\n",
                                                          extra + "    # region math\n") + "\n")
    return path


@pytest.fixture
def user() -> Any:
    fn = _load(PROGRAM / "gelu.py", "gelu_kernel", "gelu")
    yield fn
    sys.modules.pop("gelu", None)


def test_inductors_copy_of_the_user_kernel_is_the_user_kernel(tmp_path: Path, user: Any) -> None:
    copy = _load(_copy_file(tmp_path, user), "gelu_kernel", "cabc123")
    user_file, user_def, n = inductor.source_lines(user)
    copy_file, copy_def, n_copy = inductor.source_lines(copy)
    assert copy_file != user_file and copy_def != user_def and n == n_copy
    assert inductor.classify("gelu_kernel", inductor.src_text(copy), copy_file, "gelu_kernel",
                             inductor.src_text(user), user_file) == "user"
    # the copy's "# region load" line maps to the user's
    lmap = inductor.line_map(int(copy_def), int(user_def), n)
    copy_lines = Path(str(copy_file)).read_text().splitlines()
    user_lines = (PROGRAM / "gelu.py").read_text().splitlines()
    at = next(i + 1 for i, ln in enumerate(copy_lines) if "# region load" in ln)
    assert lmap["first"] <= at <= lmap["last"]
    assert user_lines[at + lmap["offset"] - 1] == copy_lines[at - 1]


def test_a_copy_with_other_source_is_not_the_user_kernel(tmp_path: Path, user: Any) -> None:
    copy = _load(_copy_file(tmp_path, user, extra="    x = x * 2.0\n"), "gelu_kernel", "cabc124")
    src, usrc = inductor.src_text(copy), inductor.src_text(user)
    assert src is not None and usrc is not None
    assert inductor.classify("gelu_kernel", src, "/c/x.py", "gelu_kernel", usrc,
                             str(PROGRAM / "gelu.py")) == "user_modified"
    assert "x = x * 2.0" in inductor.source_difference(src, usrc)


def test_inductors_kernels_and_renames() -> None:
    assert inductor.classify("triton_poi_fused_add_0", "def triton_poi_fused_add_0(a):\n", None,
                             "gelu_kernel", "def gelu_kernel(x):\n", None) == "inductor"
    assert inductor.classify("softmax_kernel", "def softmax_kernel(a):\n", None,
                             "gelu_kernel", "def gelu_kernel(x):\n", None) == "other"
    assert inductor.same_kernel_name("gelu_kernel_0", "gelu_kernel")
    assert not inductor.same_kernel_name("gelu_kernel_fused", "gelu_kernel")
    # unique_user_kernel_names renames the def; the text is still the user's
    assert inductor.classify("gelu_kernel_0", "def gelu_kernel_0(x):\n    pass\n", None,
                             "gelu_kernel", "def gelu_kernel(x):\n    pass\n", None) == "user"


def _state(tmp_path: Path, kernel: str, program: str) -> Any:
    from argusdb.observe.launch.hooks import State

    return State({"kernel": kernel, "program": program, "out": str(tmp_path / "out")})


def test_a_kernel_that_holds_the_user_function_inlined_is_named(tmp_path: Path) -> None:
    prog = tmp_path / "acts.py"
    prog.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                    "def gelu_tile(x):\n    # region math\n"
                    "    return x * tl.sigmoid(1.5957691216057308 * x)\n")
    _load(prog, "gelu_tile", "acts")
    try:
        gen = tmp_path / "cfused.py"
        gen.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                       "def gelu_tile(x):\n    # region math\n"
                       "    return x * tl.sigmoid(1.5957691216057308 * x)\n\n\n@triton.jit\n"
                       "def triton_poi_fused_gelu_0(in_ptr, out_ptr, n, XBLOCK: tl.constexpr):\n"
                       "    offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)\n"
                       "    x = tl.load(in_ptr + offs, mask=offs < n)\n"
                       "    tl.store(out_ptr + offs, gelu_tile(x), mask=offs < n)\n")
        fused = _load(gen, "triton_poi_fused_gelu_0", "cfused")
        st = _state(tmp_path, "gelu_tile", "acts")
        assert st.inductor._classify(None, fused, "triton_poi_fused_gelu_0", "h1") == "inductor"
        rec = st.inductor.record()
        assert rec["inlined_into"] == [{"kernel": "triton_poi_fused_gelu_0", "binary": "h1",
                                        "file": str(gen.resolve())}]
        why = unseen_reason([{"inductor": rec}], "gelu_tile")
        assert why is not None
        assert "inlined gelu_tile into the kernel triton_poi_fused_gelu_0 (binary h1" in why
        assert "no launch of gelu_tile exists" in why
    finally:
        sys.modules.pop("acts", None)


def test_the_refusal_names_a_modified_copy_and_what_ran() -> None:
    mod = {"inductor": {"modified": [{"kernel": "gelu_kernel", "binary": "h2", "file": "/c/a.py",
                                      "difference": "line 9 of the function: 'y = y + b'"}]}}
    why = unseen_reason([mod], "gelu_kernel")
    assert why is not None and "whose source is not gelu_kernel's: line 9" in why
    none = {"inductor": {"compiled_launches": 40, "neighbours": {
        "triton_per_fused_native_layer_norm_0": {}, "triton_poi_fused_add_1": {}}}}
    why = unseen_reason([none], "gelu_kernel")
    assert why is not None and "made 40 launch(es) of 2 kernel(s)" in why
    assert "triton_per_fused_native_layer_norm_0" in why
    assert unseen_reason([{"launches": []}], "gelu_kernel") is None


def test_a_compiled_launch_is_recorded_and_captured(tmp_path: Path, user: Any) -> None:
    """Inductor's launcher hands ``launch_metadata`` every argument (constexprs as values):
    the hooks record the user's kernel as the target, with the binary's options, and copy the
    measured launch's arguments for the replay."""
    import torch
    from triton.compiler.compiler import ASTSource

    from argusdb.observe.launch.capture import LaunchCapture

    copy = _load(_copy_file(tmp_path, user), "gelu_kernel", "cabc125")
    st = _state(tmp_path, "gelu_kernel", "gelu")
    st.capture = LaunchCapture(st.out, 1, 1 << 20)
    src = ASTSource(copy, {"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32",
                           "BLOCK": "constexpr"}, {"BLOCK": 1024})
    md = SimpleNamespace(num_warps=4, num_stages=3, num_ctas=1, debug=True,
                         sanitize_overflow=False, enable_fp_fusion=True, shared=0,
                         name="gelu_kernel", target=None)
    kern = SimpleNamespace(src=src, hash="c0ffee", metadata=md, asm={})
    x, y = torch.randn(4096).half(), torch.empty(4096).half()
    for _ in range(3):
        st.inductor.launch(kern, (4, 1, 1), (x, y, 4096, 1024))
    other = SimpleNamespace(src=SimpleNamespace(fn=None), hash="beef", metadata=md,
                            name="triton_poi_fused_add_0")
    st.inductor.launch(other, (1, 1, 1), ())
    assert [x["role"] for x in st.launches] == ["program"] * 3
    assert {x["launcher"] for x in st.launches} == {"inductor"}
    info = st.binaries["c0ffee"]
    assert info["constexprs"] == {"BLOCK": 1024} and info["launcher"] == "inductor"
    assert info["options"]["debug"] is True and info["options"]["sanitize_overflow"] is False
    assert info["line_map"]["offset"] == (inductor.source_lines(user)[1]
                                          - inductor.source_lines(copy)[1])
    assert st.module_file == str((PROGRAM / "gelu.py").resolve())
    snap = st.capture.held["c0ffee"]
    assert snap.launch == 1 and [a["name"] for a in snap.args] == ["x_ptr", "y_ptr", "n"]
    assert snap.kwargs["BLOCK"]["value"] == 1024 and snap.kwargs["debug"]["value"] is True
    rec = st.inductor.record()
    assert rec["neighbours"] == {"triton_poi_fused_add_0": {"kind": "inductor", "launches": 1,
                                                           "binaries": ["beef"]}}
    assert rec["user_kernel_binaries"] == ["c0ffee"]


def test_arguments_line_up_with_or_without_constexprs(user: Any) -> None:
    got = inductor.arguments(user, ("x", "y", 7, 1024), {(3,): 1024})
    assert got == ([("x_ptr", "x"), ("y_ptr", "y"), ("n", 7)], {"BLOCK": 1024})
    got = inductor.arguments(user, ("x", "y", 7), {(3,): 1024})
    assert got is not None and got[0][2] == ("n", 7)
    assert inductor.arguments(user, ("x",), {}) is None


def test_locations_move_to_the_user_file_and_ptx_compares_without_them() -> None:
    lmap = inductor.line_map(20, 8, 12)
    ttgir = ('#loc1 = loc("/c/cabc.py":24:30)\n#loc2 = loc("/c/cabc.py":5:1)\n'
             '#loc3 = loc("/other.py":24:3)\n')
    got = inductor.map_locations(ttgir, "/c/cabc.py", "/u/gelu.py", lmap)
    assert '#loc1 = loc("/u/gelu.py":12:30)' in got
    assert '#loc2 = loc("/c/cabc.py":5:1)' in got and '"/other.py":24:3' in got
    sass = '        //## File "/c/cabc.py", line 31\n        //## File "/c/cabc.py", line 40\n'
    got = inductor.map_locations(sass, "/c/cabc.py", "/u/gelu.py", lmap)
    assert '//## File "/u/gelu.py", line 19' in got and '"/c/cabc.py", line 40' in got
    ptx = ('.file\t1 "/c/cabc.py"\n\t.loc\t1 24 30\n\tld.global.b16 %rs1, [%rd1];\n'
           '\t.loc\t1 5 0\n')
    got = inductor.map_locations(ptx, "/c/cabc.py", "/u/gelu.py", lmap)
    assert '.file\t1 "/u/gelu.py"' in got and ".loc\t1 12 30" in got
    assert inductor.ptx_difference(ptx, got) is None
    other = ptx.replace("ld.global.b16", "ld.global.nc.b16")
    assert "ld.global.nc.b16" in str(inductor.ptx_difference(ptx, other))


def test_each_run_compiles_in_a_cache_of_its_own(tmp_path: Path) -> None:
    base = {"TORCHINDUCTOR_CACHE_DIR": "/home/u/.cache/inductor", "PATH": "/bin"}
    a = inductor.inductor_env(base, tmp_path / "find_launch")
    b = inductor.inductor_env(base, tmp_path / "cupti_timing.forced_wait")
    assert a["TORCHINDUCTOR_CACHE_DIR"] != b["TORCHINDUCTOR_CACHE_DIR"]
    assert a["TORCHINDUCTOR_CACHE_DIR"].startswith(str(tmp_path.resolve()))
    assert a["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
    assert a["TORCHINDUCTOR_COMPILE_THREADS"] == "1" and a["PATH"] == "/bin"
