"""Doctests of the package's module examples: ``pytest`` collects every module of
``argusdb/`` as a doctest module (what ``--doctest-modules`` does, limited
to the package: the tests' own helpers, workers and recorded programs are not examples).

Every example runs in a fresh folder holding what examples name: ``argus.duckdb`` (the store
``argus demo`` builds from the real H200 recordings), the demo kernels (``kernels/``,
``softmax.py``), the H200 matmul timed in two configurations (``config=bk64_s3``,
``config=bk32_s1``) and real artefacts under the names the readers' examples use. The namespace
has ``argusdb``, ``sqlglot``, ``exp``, ``Path`` and ``json``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from argusdb.store import open_store

ROOT = Path(__file__).parent
DATA = ROOT / "tests" / "data"
#: Example name → recorded artefact (real, from tests/data).
ARTEFACTS = {
    "softmax.source.csv": "gpu/softmax.default.source.csv",
    "softmax.raw.csv": "gpu/softmax.default.raw.csv",
    "softmax.sass": "gpu/softmax.default.sass",
    "softmax.fw_load.cupti.jsonl": "gpu/softmax.default.fw_load.cupti.jsonl",
    "softmax.ptx": "triton/softmax.ptx",
    "softmax.ncu-rep": "ncu/softmax.ncu-rep",
    "trace.json.gz": "kineto/triton_example.json.gz",
    "report.sqlite": "nsys/perlmutter-cloverleaf-cuda.sqlite",
    "tree.hatchet": "proton/tree.hatchet",
    "instr_trace.chrome_trace": "proton/instr_trace.chrome_trace",
    "tp_block.rank0.spans.jsonl.gz":
        "gpu/xlayer/xl-overlap-forced-1/tp_block.overlap.forced.r1.rank0.spans.jsonl.gz",
}


#: Package folders whose modules' examples run as doctests.
DOCTEST_ROOTS = (ROOT / "argusdb",)
#: Modules that are programs, not examples: the CLI entry point and the recorded kernels.
collect_ignore = ["argusdb/__main__.py"]
collect_ignore_glob = ["argusdb/demo/h200/*", "argusdb/demo/kernels/*"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Each package module as a doctest module (``--doctest-modules``, for the package)."""
    from _pytest.doctest import DoctestModule

    if file_path.suffix == ".py" and any(file_path.is_relative_to(r) for r in DOCTEST_ROOTS):
        return DoctestModule.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def _example_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from argusdb import demo
    from argusdb.collectors.regions import ProgramSource
    from argusdb.ingest import ingest_path

    path = tmp_path_factory.mktemp("example-store") / "argus.duckdb"
    st = open_store(path, create=True)
    demo.build(st)
    # two configurations of the H200 matmul, timed there: the versions diff examples compare
    src = ProgramSource.from_path(ROOT / "argusdb" / "demo" / "kernels" / "matmul.py")
    for config in ("bk64_s3", "bk32_s1"):
        ingest_path(st, DATA / "gpu" / f"matmul.{config}.run1.cupti.jsonl", src,
                    {"config": config, "target": "sm_90"})
    st.close()
    return path


@pytest.fixture(autouse=True)
def _doctest_folder(request: pytest.FixtureRequest, tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if not isinstance(request.node, pytest.DoctestItem):
        yield
        return
    import sqlglot
    from sqlglot import exp

    import argusdb

    shutil.copy(request.getfixturevalue("_example_store"), tmp_path / "argus.duckdb")
    kernels = ROOT / "argusdb" / "demo" / "h200" / "sources"
    shutil.copytree(kernels, tmp_path / "kernels")
    shutil.copy(kernels / "softmax.py", tmp_path / "softmax.py")
    shutil.copy(ROOT / "argusdb" / "demo" / "h200" / "softmax" / "softmax.ttgir",
                tmp_path / "softmax.ttgir")
    (tmp_path / "tools").symlink_to(ROOT / "tools")
    (tmp_path / "argusdb").symlink_to(ROOT / "argusdb")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    for name, rel in ARTEFACTS.items():
        (tmp_path / name).symlink_to(DATA / rel)
    monkeypatch.chdir(tmp_path)
    ns = request.getfixturevalue("doctest_namespace")
    ns.update({"argusdb": argusdb, "sqlglot": sqlglot, "exp": exp, "Path": Path,
               "json": json, "open_store": open_store})
    yield
