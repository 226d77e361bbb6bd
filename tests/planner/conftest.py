"""Planner fixtures: the recorded pass table (what CI plans with) and a demo store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from argusdb import demo
from argusdb.planner.profiler_host import TableCounter, load_table
from argusdb.store import Store
from tests.conftest import ROOT

#: Every kernel source with region markers: the demo's, and the GPU side's when present.
KERNEL_FILES = sorted([*(ROOT / "argusdb" / "demo" / "h200" / "kernels").glob("*.py"),
                       *(ROOT / "gpu" / "kernels").glob("*.py")])


@pytest.fixture(scope="session")
def table() -> TableCounter:
    return load_table()


@pytest.fixture
def demo_store(tmp_path: Path) -> Iterator[Store]:
    """A store built from the real H200 demo artefacts (cupti timings of both kernels)."""
    st = Store.open(tmp_path / "demo.duckdb", create=True)
    demo.build(st)
    yield st
    st.close()
