"""A store of real H200 recordings for the hostile-input tests, and its fingerprint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import argusdb
from argusdb.store import open_store
from tests.answers.conftest import MATMUL_TRACE, SOFTMAX_TRACE
from tests.conftest import KERNELS


@pytest.fixture(scope="session")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two versions of matmul and one of softmax; closed, so each test opens it itself."""
    path = tmp_path_factory.mktemp("hostile") / "h.duckdb"
    with argusdb.connect(path, create=True) as db:
        for v in ("a", "b"):
            db.ingest(MATMUL_TRACE, KERNELS / "matmul.py", {"variant": v})
        db.ingest(SOFTMAX_TRACE, KERNELS / "softmax.py", {"variant": "a"})
    yield str(path)


def fingerprint(path: str | Path) -> dict[str, Any]:
    """Everything a write could change: sequence values, and each table's rows (count and a
    hash of every row), the views, macros and sequences that exist."""
    with open_store(path, read_only=True) as st:
        out: dict[str, Any] = {"sequences": st.sql(
            "SELECT sequence_name, last_value FROM duckdb_sequences() ORDER BY 1").fetchall()}
        out["objects"] = st.sql(
            "SELECT 'view', view_name FROM duckdb_views() WHERE NOT internal UNION ALL "
            "SELECT 'table', table_name FROM duckdb_tables() UNION ALL "
            "SELECT 'macro', function_name FROM duckdb_functions() WHERE NOT internal "
            "ORDER BY ALL").fetchall()
        for (t,) in st.sql("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
            out[t] = st.sql(f'SELECT count(*), sum(hash(t)) FROM "{t}" AS t').fetchone()
    return out
