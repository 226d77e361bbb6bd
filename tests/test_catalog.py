"""Every column of every public table and view is documented, in the modules and in DuckDB."""

from __future__ import annotations

from argusdb.schema import catalog
from argusdb.store.embedded import Store


def test_every_duckdb_column_has_a_comment(store: Store) -> None:
    rows = store.sql("""
        SELECT table_name, column_name, comment FROM duckdb_columns()
        WHERE schema_name = 'main' AND NOT internal AND table_name NOT LIKE '\\_%' ESCAPE '\\'
    """).fetchall()
    assert rows, "the store has no columns"
    undocumented = [(t, c) for t, c, doc in rows if not doc]
    assert undocumented == []


def test_every_object_has_a_description() -> None:
    objs = catalog.all_objects()
    assert {"run", "observed_evidence", "evidence"} <= objs.keys()
    assert [n for n, o in objs.items() if not o.description] == []


def test_view_documents_its_columns() -> None:
    ev = catalog.all_objects()["evidence"]
    for col in ("program_version", "task_id", "run_id", "region_id", "launch", "cta", "sm",
                "warp", "warp_role", "loop_iter", "signal", "value", "unit", "evidence_class",
                "association_entropy", "lineage"):
        assert ev.columns.get(col), col
