"""What a store of this schema must hold: every table and column that ``argusdb/schema/``
declares (a dropped or renamed one is refused), and whether code argusdb re-creates (a view, a
macro, the run sequence) is missing."""

from __future__ import annotations

from typing import Any

from argusdb.errors import StoreError
from argusdb.schema import catalog
from argusdb.store.versions import SCHEMA_VERSION


def check_structure(con: Any, path: str) -> bool:
    """Check a store of this schema against ``argusdb/schema/``: every table and column
    its DDL declares must be there (a dropped or renamed one means lost rows or values:
    refused). Returns whether a view, macro, derived table or the run sequence is missing
    (code and counters argusdb re-creates: ``Store.ensure_schema`` with ``rebuild``).

    Raises:
        StoreError: a table or column of the schema is missing, naming each one.
    """
    have: dict[str, set[str]] = {}
    for table, column in con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = "
            "current_database() AND schema_name = 'main' AND NOT internal").fetchall():
        have.setdefault(str(table), set()).add(str(column))
    lost: list[str] = []
    extra: list[str] = []
    for mod in catalog.schema_modules():
        for obj in mod.objects:
            if obj.kind != "table":
                continue
            if obj.name not in have:
                lost.append(f"table {obj.name}")
                continue
            lost += [f"column {obj.name}.{c}" for c in obj.columns if c not in have[obj.name]]
            extra += [f"{obj.name}.{c}" for c in sorted(have[obj.name] - set(obj.columns))]
    if lost:
        also = f" (and has column(s) it does not declare: {', '.join(extra[:5])})" \
            if extra else ""
        raise StoreError(
            f"{path}: damaged: {', '.join(lost[:8])}{' ...' if len(lost) > 8 else ''} "
            f"of store schema {SCHEMA_VERSION} {'is' if len(lost) == 1 else 'are'} "
            f"missing{also}; the rows or values held there are gone, so argusdb does not "
            "open it. Restore the store from a copy, or create a new store ('argus init "
            "NEW.duckdb') and ingest the artefacts again.")
    code = {str(n) for (n,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND database_name = "
        "current_database() UNION SELECT function_name FROM duckdb_functions() WHERE "
        "function_type IN ('macro', 'table_macro') AND NOT internal AND database_name = "
        "current_database() UNION SELECT sequence_name FROM duckdb_sequences() WHERE "
        "database_name = current_database()").fetchall()} | set(have)
    wanted = {o.name for m in catalog.query_modules() for o in m.objects} | {"run_seq_gen"}
    return bool(wanted - code)
