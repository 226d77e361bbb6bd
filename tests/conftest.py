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


@pytest.fixture(autouse=True)
def _kept_checks(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Accepted checks kept across processes (argusdb.api.kept) go to a folder of the test's
    own (beside its tmp_path, which some tests list), never the user's cache (child processes
    inherit it)."""
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path_factory.mktemp("kept-checks")))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    st = open_store(tmp_path / "t.duckdb", create=True)
    yield st
    st.close()


@pytest.fixture(scope="module")
def softmax_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file holding the demo's recorded softmax timing, made through ``argusdb.api``
    (once per test module)."""
    from argusdb.api import connect

    path = tmp_path_factory.mktemp("softmax") / "softmax.duckdb"
    with connect(path, create=True) as con:
        con.ingest(DEMO / "softmax" / "softmax.cupti.jsonl", program=KERNELS / "softmax.py")
    return path
