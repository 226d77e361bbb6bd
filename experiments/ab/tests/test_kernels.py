"""The benchmark's kernels and moves under Triton's interpreter on tiny shapes (CPU).

The checks run in a process of their own (``python -m experiments.ab.check``): the interpreter
patches ``triton.language`` for the rest of a process, which would break other tests' sm_90
compiles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from experiments.ab import harness

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def checked() -> dict[str, dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]))
    r = subprocess.run([sys.executable, "-m", "experiments.ab.check"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    return {row["kernel"]: row for row in rows}


@pytest.mark.parametrize("name", harness.NAMES)
def test_base_and_every_move_from_it_compute_the_reference(
        checked: dict[str, dict[str, Any]], name: str) -> None:
    row = checked[name]
    assert row["base"] is not None and row["base"] <= row["tol"]
    feasible = {m: e for m, e in row["moves"].items() if e is not None}
    assert len(feasible) >= 3
    assert all(e <= row["tol"] for e in feasible.values()), feasible


@pytest.mark.parametrize("name", harness.NAMES)
def test_forced_wait_probe_of_the_load_region_computes_the_same(
        checked: dict[str, dict[str, Any]], name: str) -> None:
    probe = checked[name]["probe"]
    assert probe["transform"].startswith(f"forced_wait:{name}/")
    assert probe["rel_err"] is not None and probe["rel_err"] <= checked[name]["tol"]


def test_check_refuses_an_unknown_kernel() -> None:
    r = subprocess.run([sys.executable, "-m", "experiments.ab.check", "sofmax"],
                       capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 2 and "sofmax" in r.stderr and "softmax" in r.stderr


def test_moves_are_one_step_and_cover_every_knob() -> None:
    mod = harness.load("matmul")
    ms = harness.moves(mod.SPACE, mod.BASE)
    for m in ms:
        new = m.cfg()
        changed = [k for k in new if new[k] != mod.BASE[k]]
        assert changed == [m.knob]
        vals = mod.SPACE[m.knob]
        assert abs(vals.index(new[m.knob]) - vals.index(mod.BASE[m.knob])) == 1
    assert {m.knob for m in ms} == set(mod.SPACE)
    assert {m.category for m in ms} == {"tile", "schedule", "mask", "warps", "stages"}
    j = harness.jump(mod.BASE, dict(mod.BASE, BLOCK_M=256))
    assert j.name == "jump:" + harness.key(dict(mod.BASE, BLOCK_M=256))
