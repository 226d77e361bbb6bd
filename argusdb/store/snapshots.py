"""A store as it stood at a snapshot (``--as-of``): an in-memory, read-only copy of the runs
committed up to it, with attribution and derivation rebuilt there.

Example:
    >>> with open_store("argus.duckdb", as_of="3") as st:  # doctest: +SKIP
    ...     st.rows("SELECT count(*) AS n FROM run")
"""

from __future__ import annotations

from typing import Any

from argusdb.errors import StoreError
from argusdb.store import materialize
from argusdb.store.embedded import Store
from argusdb.store.versions import _BY_TIME, DERIVED, parse_time, schema_tables


def resolve_snapshot(store: Store, spec: str) -> dict[str, Any]:
    """The ``store_snapshot`` row that ``spec`` (a number, or an ISO time in UTC) names.

    Raises:
        StoreError: no such snapshot, or none at or before the time.
    """
    spec = spec.strip()
    if spec.isdigit():
        rows = store.rows("SELECT * FROM store_snapshot WHERE snapshot_id = ?", [int(spec)])
        if not rows:
            last = store.sql("SELECT max(snapshot_id) FROM store_snapshot").fetchone()
            raise StoreError(f"{store.path}: no snapshot {spec} (snapshots 1 to "
                             f"{last[0] if last and last[0] else 0}; "
                             f"'argus runs {store.path} --snapshots' lists them)")
        return rows[0]
    at = parse_time(spec)
    rows = store.rows("SELECT * FROM store_snapshot WHERE committed_at <= ? "
                      "ORDER BY snapshot_id DESC LIMIT 1", [at])
    if not rows:
        raise StoreError(f"{store.path}: no snapshot at or before {spec} (the first run landed "
                         "later; 'argus runs --snapshots' lists the snapshots)")
    return rows[0]


def as_of(src: Store, spec: str) -> Store:
    """An in-memory, read-only copy of embedded store ``src`` as it stood at snapshot ``spec``."""
    from argusdb.store.embedded import Store

    snap = resolve_snapshot(src, spec)
    seq, at = int(snap["run_seq_max"]), snap["committed_at"]
    mem = Store.in_memory(f"{src.path}@{snap['snapshot_id']}")
    runs = "(SELECT run_id FROM run WHERE run_seq <= $seq)"
    versions = ("(SELECT program_version FROM run WHERE run_seq <= $seq UNION "
                "SELECT parent_version FROM program_version WHERE program_version IN "
                "(SELECT program_version FROM run WHERE run_seq <= $seq))")
    for table in schema_tables():
        if table in DERIVED or table == "store_meta":
            continue
        cols = {c for (c,) in src.sql("SELECT column_name FROM duckdb_columns() "
                                      "WHERE table_name = ?", [table]).fetchall()}
        if table == "run":
            where = "run_seq <= $seq"
        elif table == "store_snapshot":
            where = "snapshot_id <= $snap"
        elif table == "task":
            where = ("task_id IN (SELECT task_id FROM run WHERE run_seq <= $seq) "
                     "OR finished_at <= $at")
        elif "run_id" in cols:
            where = f"run_id IN {runs}"
        elif "program_version" in cols:
            where = f"program_version IN {versions}"
        elif table in _BY_TIME:
            where = f"{_BY_TIME[table]} <= $at"
        else:
            where = "true"
        data = src.con.execute(f"SELECT * FROM {table} WHERE {where}",
                               {k: v for k, v in {"seq": seq, "at": at,
                                                  "snap": snap["snapshot_id"]}.items()
                                if f"${k}" in where}).to_arrow_table()
        mem.load_arrow(table, data)
    mem.reset_run_seq()
    with mem.transaction():
        materialize.refresh(mem)
    mem.read_only = True
    return mem
