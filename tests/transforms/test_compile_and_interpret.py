"""Variants compiled for sm_90 with Triton's CPU toolchain, and run under TRITON_INTERPRET=1.

The SASS check is what makes ``forced_wait`` real: ptxas keeps one ``SHFL.IDX`` per forced
32-bit register (reading ``SR_LANEID``) in the variant and none in the parent. The same counts
were seen in the H200 recordings (tests/data/gpu/*.sass).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.observe.transforms import forced_wait
from tests.transforms.kernels import KERNELS, load, sm90_sass

pytest.importorskip("triton", reason="the test extra installs Triton (Linux x86_64)")
DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def count(sass: str, what: str) -> int:
    return sum(what in ln for ln in sass.splitlines())


@pytest.mark.parametrize(("program", "region", "shuffles"), [
    ("softmax", "load", 8),       # 1024 fp32 / 128 threads
    ("attention", "load_k", 8),   # 64x64 fp16 / 256 threads, two halves a register
])
def test_forced_wait_puts_a_shuffle_per_register_into_sm90_sass(tmp_path, program, region,
                                                                  shuffles):
    parent = ProgramSource.from_path(KERNELS / f"{program}.py")
    p = sm90_sass(parent.text, program, f"{program}_parent", tmp_path)
    v = sm90_sass(forced_wait(parent, region).source.text, program, f"{program}_fw", tmp_path)
    assert count(p, "SHFL.IDX") == 0
    assert count(v, "SHFL.IDX") == shuffles
    assert count(v, "SR_LANEID") == 1
    assert count(v, "LDG") == count(p, "LDG")


def test_the_h200_recordings_show_the_same_shuffles():
    got = {f.name: count(f.read_text(), "SHFL.IDX") for f in sorted(DATA.glob("*.sass"))}
    assert got == {"attention.causal.fw_load_k.sass": 8, "attention.causal.fw_load_q.sass": 16,
                   "attention.causal.fw_load_v.sass": 8, "attention.causal.sass": 0,
                   "matmul.bk64_s3.fw_mainloop.sass": 32, "matmul.bk64_s3.sass": 0,
                   "softmax.default.fw_load.sass": 8, "softmax.default.sass": 0}


@pytest.fixture(scope="module")
def interpreted() -> dict:
    pytest.importorskip("torch", reason="the interpreter runs on torch CPU tensors")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(root))
    p = subprocess.run([sys.executable, "-m", "tests.transforms.interp_check"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


@pytest.mark.parametrize("case", ["softmax/load", "matmul/mainloop", "attention/load_k",
                                  "attention/load_v"])
def test_variants_compute_exactly_what_the_parent_computes(interpreted, case):
    got = interpreted[case]
    assert got["parent_rel_err"] < 1e-3
    assert got["forced_wait"] is True
    assert got["proton_scopes"] is True


def test_the_interpreter_switch_is_read_when_the_variant_is_imported(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    v = forced_wait(ProgramSource.from_path(KERNELS / "softmax.py"), "load")
    mod = load(v.source.text, "switch_softmax", tmp_path)
    assert not bool(mod._ARGUS_INTERPRET)
