"""The launcher's hooks in real user programs, on a CPU under TRITON_INTERPRET=1.

Each test runs one of tests/data/programs/ unmodified in a subprocess with the bootstrap on
PYTHONPATH (as the runner does) and reads the launch record the hooks wrote.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.observe.launch import command_env, read_launches, write_spec
from argusdb.observe.transforms import apply

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
MODEL = [sys.executable, "model.py", "--tokens", "16", "--dim", "64", "--blocks", "2",
         "--steps", "3"]

pytest.importorskip("torch")
pytest.importorskip("triton")


def launch(tmp_path: Path, folder: str, argv: list[str], **spec: Any) -> list[dict[str, Any]]:
    out = tmp_path / "out"
    doc = {"out": str(out), "mode": "plain", **spec}
    path = write_spec(tmp_path / "spec.json", doc)
    env = command_env(path, {**os.environ, "TRITON_INTERPRET": "1"})
    p = subprocess.run(argv, cwd=PROGRAMS / folder, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return [d for d in read_launches(out) if d.get("launches")]


def test_discovers_the_kernel_in_a_module_that_imports_a_sibling(tmp_path: Path) -> None:
    docs = launch(tmp_path, "model", MODEL, kernel="layernorm_fwd", program="fused_norm",
                  mode="discover")
    assert len(docs) == 1
    doc = docs[0]
    # 2 blocks x 3 steps + the program's own check launch
    assert [x["role"] for x in doc["launches"]] == ["program"] * 7
    assert Path(doc["module_file"]) == (PROGRAMS / "model" / "fused_norm.py").resolve()
    (binary,) = doc["binaries"].values()
    assert binary["constexprs"] == {"BLOCK": 64} and binary["num_warps"] == 4
    assert doc["chosen_binary"] == "interpreter:BLOCK=64,num_warps=4"


def test_a_kernel_of_another_module_is_not_the_target(tmp_path: Path) -> None:
    assert launch(tmp_path, "model", MODEL, kernel="layernorm_fwd", program="norm_config") == []


def test_forced_wait_variant_runs_in_place_and_matches_the_parent(tmp_path: Path) -> None:
    src = ProgramSource.from_path(PROGRAMS / "model" / "fused_norm.py")
    var = apply("forced_wait", src, {"region_id": "fused_norm/layernorm_fwd/load"})
    path = tmp_path / "variant" / "fused_norm.py"
    path.parent.mkdir()
    path.write_text(var.source.text)
    (doc,) = launch(tmp_path, "model", MODEL, kernel="layernorm_fwd", program="fused_norm",
                    variant=str(path), check_index=2)
    check = doc["variant_check"]
    assert check["launch"] == 2 and check["rel_err_vs_parent"] == 0.0
    assert check["tensors_written"] >= 1
    roles = [x["role"] for x in doc["launches"]]
    assert roles.count("check") == 1 and roles.count("program") == 7


def test_a_variant_that_computes_something_else_is_caught(tmp_path: Path) -> None:
    text = (PROGRAMS / "model" / "fused_norm.py").read_text()
    wrong = text.replace("y = xc / tl.sqrt(var + eps) * w + b",
                         "y = 2.0 * xc / tl.sqrt(var + eps) * w + b")
    assert wrong != text
    path = tmp_path / "variant" / "fused_norm.py"
    path.parent.mkdir()
    path.write_text(wrong)
    (doc,) = launch(tmp_path, "model", MODEL, kernel="layernorm_fwd", program="fused_norm",
                    variant=str(path))
    assert doc["variant_check"]["rel_err_vs_parent"] > 0.5


def test_autotuner_pinned_to_the_chosen_config_launches_only_it(tmp_path: Path) -> None:
    pin = "num_warps: 2, num_ctas: 1, num_stages: 3, maxnreg: None"
    (doc,) = launch(tmp_path, "autotuned", [sys.executable, "run.py", "4"],
                    kernel="softmax_kernel", program="softmax_tuned", pin=pin)
    assert doc["autotune"]["pinned"] == pin and doc["autotune"]["chosen"] == [pin]
    assert len(doc["autotune"]["configs"]) == 3
    assert {x["role"] for x in doc["launches"]} == {"program"} and len(doc["launches"]) == 10
    assert next(iter(doc["binaries"].values()))["num_warps"] == 2


def test_pipelining_off_overrides_reach_every_launch(tmp_path: Path) -> None:
    (doc,) = launch(tmp_path, "model", MODEL, kernel="layernorm_fwd", program="fused_norm",
                    overrides={"num_stages": 1})
    (binary,) = doc["binaries"].values()
    assert binary["num_stages"] == 1
    # the checked launch ran the parent (the program's own options) on copies: same result
    assert [x["role"] for x in doc["launches"]].count("check") == 1
    assert doc["variant_check"]["rel_err_vs_parent"] == 0.0


def test_the_launcher_module_runs_a_command_and_summarises(tmp_path: Path) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-m", "argusdb.observe.launch", "--kernel", "layernorm_fwd",
                        "--program", "fused_norm", "--out", str(tmp_path / "out"), "--", *MODEL],
                       cwd=PROGRAMS / "model", env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "7 launches of layernorm_fwd" in p.stderr
    assert "interpreter:BLOCK=64,num_warps=4 program: 7" in p.stderr
    assert "layer norm rel err" in p.stdout  # the program's own output passes through


def test_a_variant_of_a_module_that_registers_an_op_keeps_the_program_s_op(
        tmp_path: Path) -> None:
    """``scale_add.py`` registers a ``torch.library`` op at import (``triton_op``). Loading
    the variant must not run that registration again: the op would then launch the variant's
    kernel itself, past the hooks (the hooks saw 1 of 12 launches on the H200 when the whole
    variant file ran). Only the variant's Triton functions and ``_argus`` helpers run."""
    src = ProgramSource.from_path(PROGRAMS / "customop" / "scale_add.py")
    var = apply("forced_wait", src, {"region_id": "scale_add/scale_add_kernel/load"})
    path = tmp_path / "variant" / "scale_add.py"
    path.parent.mkdir()
    path.write_text(var.source.text)
    (doc,) = launch(tmp_path, "customop", [sys.executable, "cpu.py", "5"],
                    kernel="scale_add_kernel", program="scale_add", variant=str(path),
                    check_index=2)
    roles = [x["role"] for x in doc["launches"]]
    # every one of the 5 steps went through the hooks, plus the parent's check launch
    assert roles.count("program") == 5 and roles.count("check") == 1, roles
    assert doc["variant_check"]["rel_err_vs_parent"] == 0.0 and not doc["errors"]


def test_the_variant_loads_only_its_kernels_and_helpers(tmp_path: Path) -> None:
    """In this process: the variant module starts from the parent's namespace and runs only
    imports, ``_argus`` assignments and Triton functions of the variant file."""
    import importlib

    from argusdb.observe.launch.hooks import load_variant

    sys.path.insert(0, str(PROGRAMS / "customop"))
    try:
        parent = importlib.import_module("scale_add")
        text = (PROGRAMS / "customop" / "scale_add.py").read_text()
        marked = text.replace('@triton_op("demo::scale_add"', "SIDE_EFFECTS.append(1)\n\n\n"
                              '@triton_op("demo::scale_add"') + "\nSIDE_EFFECTS = []\n"
        path = tmp_path / "scale_add.py"
        path.write_text(marked)
        var = load_variant(parent.scale_add_kernel, str(path), "scale_add_kernel")
        assert var.fn.__code__.co_filename == str(path) and var is not parent.scale_add_kernel
        mod = sys.modules[var.fn.__module__]
        # the op wrapper is the parent's (not run again); no module-level statement ran
        assert mod.scale_add is parent.scale_add and "SIDE_EFFECTS" not in vars(mod)
    finally:
        sys.path.remove(str(PROGRAMS / "customop"))
        sys.modules.pop("scale_add", None)


def test_a_proton_scopes_variant_runs_in_place_with_its_prelude(tmp_path: Path) -> None:
    """A ``proton_scopes`` variant's prelude is an ``if`` on ``_argus`` names (no-op scopes under
    the interpreter, Proton's language module otherwise): the loader must run it, or the
    kernel's ``_argus_pl.enter_scope`` is undefined. Under the interpreter no Proton session
    starts (there is no binary to instrument), so ``proton`` mode says nothing was
    instrumented."""
    src = ProgramSource.from_path(PROGRAMS / "model" / "fused_norm.py")
    var = apply("proton_scopes", src, {"region_ids": ["fused_norm/layernorm_fwd/load"]})
    path = tmp_path / "variant" / "fused_norm.py"
    path.parent.mkdir()
    path.write_text(var.source.text)
    (doc,) = launch(tmp_path, "model", MODEL, kernel="layernorm_fwd", program="fused_norm",
                    variant=str(path), check_index=2)
    assert doc["variant_check"]["rel_err_vs_parent"] == 0.0 and not doc["errors"]
    (tmp_path / "proton").mkdir()
    (doc,) = launch(tmp_path / "proton", "model", MODEL, kernel="layernorm_fwd",
                    program="fused_norm", variant=str(path), check_index=2, mode="proton")
    assert doc["variant_check"]["rel_err_vs_parent"] == 0.0
    assert doc["errors"] and "no launch was instrumented" in doc["errors"][0]


def test_the_loader_keeps_argus_prelude_blocks_only() -> None:
    import ast

    from argusdb.observe.launch.hooks import _variant_statement

    def kept(code: str) -> bool:
        return _variant_statement(ast.parse(code).body[0])

    assert kept("if _argus_os.environ.get('X') == '1':\n    class _argus_pl:\n        pass\n"
                "else:\n    import triton.profiler.language as _argus_pl\n"
                "    _argus_pl.enable_semantic('triton')\n")
    # a program's own blocks, calls and classes do not run again
    assert not kept("if DEBUG:\n    import pdb\n")
    assert not kept("if _argus_x:\n    register_op()\n")
    assert not kept("torch.library.define('x')\n")
    assert not kept("class Model:\n    pass\n")
