"""The scope coordinates are defined once (the @scope columns of schema/, argusdb.schema.shape): the
tables and the evidence view carry exactly those, in that order, and a collector's default is
'all'."""

from __future__ import annotations

from pathlib import Path

from argusdb.collectors.base import (
    EVIDENCE_SCHEMA,
    INTRA_KERNEL_SCOPE,
    SCOPE_COLUMNS,
    evidence_batch,
)
from argusdb.schema import catalog
from argusdb.store import open_store


def _scope_cols(names: list[str]) -> list[str]:
    return [c for c in names if c in SCOPE_COLUMNS]


def test_tables_and_views_carry_the_scope_in_order(tmp_path: Path) -> None:
    objs = catalog.all_objects()
    assert _scope_cols(list(objs["observed_evidence"].columns)) == list(SCOPE_COLUMNS)
    assert _scope_cols(list(objs["evidence"].columns)) == list(SCOPE_COLUMNS)
    assert _scope_cols(EVIDENCE_SCHEMA.names) == list(SCOPE_COLUMNS)
    with open_store(tmp_path / "s.duckdb", create=True) as st:
        cols = [r["column_name"] for r in st.rows(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'evidence' "
            "ORDER BY column_index")]
    assert _scope_cols(cols) == list(SCOPE_COLUMNS)
    assert INTRA_KERNEL_SCOPE == ("cta", "sm", "warp", "warp_role", "loop_iter")


def test_missing_scope_is_all() -> None:
    b = evidence_batch({"signal": ["duration"], "value": [1.0]})
    assert {c: b.column(c)[0].as_py() for c in SCOPE_COLUMNS} == dict.fromkeys(SCOPE_COLUMNS,
                                                                                "all")
