"""Stores for the answers tests, built from real H200 recordings.

Until several recorded versions of one kernel exist, *versions* here are the same real cupti
recording ingested under different ``--option variant=...`` labels (relabelled copies: their
samples are identical by construction) and under a copy of the source whose lines moved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import argusdb
from argusdb.api import Connection
from tests.conftest import DEMO, KERNELS

MATMUL_TRACE = DEMO / "matmul" / "matmul.cupti.jsonl"
SOFTMAX_TRACE = DEMO / "softmax" / "softmax.cupti.jsonl"
MOVED_LINES = 3


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
