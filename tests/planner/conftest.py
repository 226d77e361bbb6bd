"""Planner fixtures: the recorded pass table (what CI plans with) and a demo store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from argusdb import demo
from argusdb.observe.planner.profiler_host import TableCounter, load_table
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.conftest import ROOT

#: Every packaged kernel source with region markers: the demo's and the harness kernels.
KERNEL_FILES = sorted([*(ROOT / "argusdb" / "demo" / "h200" / "sources").glob("*.py"),
                       *(ROOT / "argusdb" / "demo" / "kernels").glob("*.py")])


@pytest.fixture(scope="session")
def table() -> TableCounter:
    return load_table()


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A store built once from the real H200 demo artefacts (cupti, ncu source and raw pages,
    SASS, TTGIR of both kernels). Read-only for the tests that share it."""
    st = open_store(tmp_path_factory.mktemp("demo") / "demo.duckdb", create=True)
    demo.build(st)
    yield st
    st.close()
