"""Schema versions, migrations and the embedded store's snapshots (time travel).

A store records the version of ``argusdb/schema/`` it was written with in ``store_meta``. Opening a
store of an older version migrates it inside the transaction that (re)creates the schema, so a
migration commits whole or not at all; a newer one is refused (:meth:`Store.open`).

Versions:
    1. the releases before schema versions: no ``store_meta``, no ``store_snapshot``, and the
       later of them with the ``rank``/device columns of distributed runs, the earlier without.
       Migrating adds every column ``argusdb/schema/`` declares that the store lacks (type and
       default        from the DDL), so both migrate.
    2. ``store_meta`` (schema version) and ``store_snapshot`` (one row per committed ingest). A
       schema-1 store gets one snapshot per run, at the run's ingest time, in run order.
    3. ``kernel_launch`` keeps the launching API call (``api_start_ns``, ``api_dur_ns``,
       ``api_pid``, ``api_tid``, ``api_src_row``), for the export's flow from call to kernel.
       Migrating adds the columns, NULL for the launches already stored (ingest the artefact
       again into a new store to have them); a shared store migrates the same way
       (:meth:`argusdb.store.shared.SharedStore.open_lake`).
       Also ``observed_evidence`` without the primary-key index on ``evidence_id`` (unique by
       construction): DuckDB rewrote that index at every checkpoint, so an ingest into a store
       of 1,000 runs cost ~1 s more than into a store of one. Migrating copies the table into
       one created by the current DDL (one pass over the rows, in the migrating transaction;
       a shared store has no index).

Time travel on an embedded store: snapshot ``S`` holds exactly the runs with
``run_seq <= store_snapshot.run_seq_max``. :func:`as_of` copies those runs and what they rest on
into an in-memory store and rebuilds attribution and derivation there with the same SQL modules
the store's own materialization ran, so an answer recorded at ``S`` is given again after later
runs (a new mapping run, say) changed the live split. (A shared store reads DuckLake's own
snapshots instead: :mod:`argusdb.store.shared`.)

Example:
    >>> with Store.open("argus.duckdb", as_of="3") as st:  # doctest: +SKIP
    ...     st.sql("SELECT count(*) FROM run").fetchone()
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from argusdb.errors import StoreError
from argusdb.schema import catalog

if TYPE_CHECKING:
    from argusdb.store.embedded import Store

#: Tables rebuilt from the others (never copied into a snapshot; rebuilt there).
DERIVED = ("attribution_split", "region_attribution", "derived_evidence", "materialization",
           "attribution_pc_line")
#: Tables kept as of a time by a timestamp column of theirs.
_BY_TIME = {"variant_check": "checked_at", "plan": "created_at"}


def migrate(store: Store, version: int) -> None:
    """Bring a store of schema ``version`` (0: new) to the current one, in the caller's
    transaction, after the schema modules have created any missing table."""
    from argusdb.store.embedded import SCHEMA_VERSION

    if version and version < SCHEMA_VERSION:
        store.add_missing_columns()
    if version == 1:
        store.con.execute(
            "INSERT INTO store_snapshot SELECT row_number() OVER (ORDER BY run_seq), "
            "ingested_at, run_seq, 'migrated', [run_id] FROM run ORDER BY run_seq")
    if version and version < 3:
        _recreate(store, "observed_evidence")
    store.con.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema_version', ?)",
                      [str(SCHEMA_VERSION)])


def _recreate(store: Store, table: str) -> None:
    """Copy ``table`` into a table the current DDL creates (constraints and indexes as the DDL
    now declares them), in the caller's transaction."""
    old = f"_{table}_migrating"
    store.con.execute(f"ALTER TABLE {table} RENAME TO {old}")
    for mod in catalog.schema_modules():
        if any(o.name == table for o in mod.objects):
            store.con.execute(mod.text)   # CREATE TABLE IF NOT EXISTS: only ``table`` is new
    store.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {old}")
    store.con.execute(f"DROP TABLE {old}")


def schema_tables() -> list[str]:
    """Every table of ``argusdb/schema/``, in module order."""
    return [o.name for m in catalog.schema_modules() for o in m.objects if o.kind == "table"]


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


def parse_time(spec: str) -> datetime:
    """An ISO time; without a zone it is UTC. Raises StoreError when it is not one."""
    try:
        at = datetime.fromisoformat(spec)
    except ValueError as exc:
        raise StoreError(f"--as-of {spec!r}: neither a snapshot number nor an ISO time "
                         "(e.g. 12 or 2026-11-30T23:40:00)") from exc
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at


def as_of(src: Store, spec: str) -> Store:
    """An in-memory, read-only copy of embedded store ``src`` as it stood at snapshot ``spec``."""
    from argusdb.store import materialize
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
