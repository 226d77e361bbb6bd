"""Stores for the answers tests, built from real H200 recordings.

Until several recorded versions of one kernel exist, *versions* here are the same real cupti
recording ingested under different ``--option variant=...`` labels (relabelled copies: their
samples are identical by construction) and under a copy of the source whose lines moved.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import argusdb
from argusdb import environment
from argusdb.api import Connection
from argusdb.cli import main
from tests.conftest import DEMO, KERNELS
from tests.runner.replay import PROGRAMS, RECORDED

#: Golden answers (``ARGUS_WRITE_GOLDEN=1`` writes them anew: read the diff before committing).
GOLDEN = Path(__file__).parent / "golden"
MATMUL_TRACE = DEMO / "matmul" / "matmul.cupti.jsonl"
SOFTMAX_TRACE = DEMO / "softmax" / "softmax.cupti.jsonl"
MOVED_LINES = 3


def match_golden(name: str, text: str) -> None:
    """``text`` is the golden answer ``name`` (written anew under ``ARGUS_WRITE_GOLDEN=1``)."""
    path = GOLDEN / name
    if environment.WRITE_GOLDEN.get():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def moved_source(tmp: Path) -> Path:
    """matmul.py with three comment lines inserted above the kernel: every region moves by 3."""
    src = (KERNELS / "matmul.py").read_text()
    head, tail = src.split("@triton.jit", 1)
    moved = tmp / "moved" / "matmul.py"
    moved.parent.mkdir(exist_ok=True)
    moved.write_text(head + "# moved\n" * MOVED_LINES + "@triton.jit" + tail)
    return moved


@pytest.fixture
def relabelled(tmp_path: Path) -> Iterator[Connection]:
    """One real matmul recording as versions variant=a, variant=b and a moved-lines version."""
    db = argusdb.connect(tmp_path / "r.duckdb", create=True)
    for v in ("a", "b"):
        db.ingest(MATMUL_TRACE, KERNELS / "matmul.py", {"variant": v})
    db.ingest(MATMUL_TRACE, moved_source(tmp_path), {"variant": "moved"})
    db.ingest(SOFTMAX_TRACE, KERNELS / "softmax.py", {"variant": "a"})
    yield db
    db.close()


#: The layer-norm region the H200 recordings of tests/data/gpu/programs/model observed.
LAYERNORM_LOAD = "fused_norm/layernorm_fwd/load"
#: What they were observed for: the tools/h200 default signals, then Proton's PC sampling
#: (its own task folder in the same recording).
LAYERNORM_REQUESTS = ("duration,inst_executed,warp_stall_samples,exposed_latency",
                      "pc_samples@proton,stall_long_scoreboard@proton")


@pytest.fixture(scope="session")
def layernorm_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The layer-norm program observed on the H200, replayed from its recording: its version,
    the forced-wait and the Proton-instrumented variants (16,384 per-CTA, per-warp
    ``scope_cycles``), the ncu and Proton stall reasons of its load region."""
    tmp = tmp_path_factory.mktemp("layernorm")
    mp = pytest.MonkeyPatch()
    try:
        mp.chdir(PROGRAMS / "model")
        for i, signals in enumerate(LAYERNORM_REQUESTS):
            bundle = tmp / f"bundle{i}"
            shutil.copytree(RECORDED / "model", bundle)
            mp.setenv("ARGUS_REPLAY", str(bundle))
            r = CliRunner().invoke(main, ["observe", "--region", LAYERNORM_LOAD, "--signals",
                                          signals, "--store", str(tmp / "s.duckdb"), "--json",
                                          "--", "python3", "model.py"])
            assert r.exit_code == 0, r.output
    finally:
        mp.undo()
    return str(tmp / "s.duckdb")
