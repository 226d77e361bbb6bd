"""Shared fixtures: recorded real artefacts and fresh stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from argusdb.observe.gpu import has_gpu
from argusdb.store import open_store
from argusdb.store.embedded import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DEMO = ROOT / "argusdb" / "demo" / "h200"
#: The sources the demo's recordings were made from.
KERNELS = DEMO / "sources"
#: The packaged kernels with the runner's harness contract: parents of the H200 recordings in
#: tests/data/gpu (measured by tools/h200/record.py).
GPU_KERNELS = ROOT / "argusdb" / "demo" / "kernels"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    st = open_store(tmp_path / "t.duckdb", create=True)
    yield st
    st.close()
