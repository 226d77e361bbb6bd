"""Schema versions, migrations and the embedded store's snapshots (time travel).

A store records the version of ``argusdb/schema/`` it was written with in ``store_meta``. Opening a
store of an older version migrates it inside the transaction that (re)creates the schema, so a
migration commits whole or not at all; a newer one is refused (:func:`argusdb.store.open_store`).

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
    4. the kernels of an ingested trace that are not the program's (NCCL, cuBLAS, RNG) keep
       the program version of the run they came from: their version is
       :func:`other_kernels_version` of the artefact's other kernels and that program version
       (before, one version per set of kernel names, shared by every program version whose
       traces had them, so that two programs' all-reduces pooled into one median). Migrating
       gives every timeline run (``run.meta.timeline_of``) the version of its program run's
       version, with a ``program_version`` row (``options.kernels_of``), in every table that
       keys rows by run and version; a version no run has any more is dropped.
    5. ``run.launch_replay`` (a kernel replayed from a launch captured from its program, a
       standing of its own): added by :meth:`add_missing_columns`, false for the runs stored
       before.

Time travel on an embedded store: snapshot ``S`` holds exactly the runs with
``run_seq <= store_snapshot.run_seq_max``. :func:`as_of` copies those runs and what they rest on
into an in-memory store and rebuilds attribution and derivation there with the same SQL modules
the store's own materialization ran, so an answer recorded at ``S`` is given again after later
runs (a new mapping run, say) changed the live split. (A shared store reads DuckLake's own
snapshots instead: :mod:`argusdb.store.shared`.)

Example:
    >>> with open_store("argus.duckdb", as_of="3") as st:  # doctest: +SKIP
    ...     st.sql("SELECT count(*) FROM run").fetchone()
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, Protocol

from argusdb.errors import StoreError
from argusdb.schema import catalog

#: Version of ``argusdb/schema/`` this release writes. A store records its own in
#: ``store_meta``; a store without that table but with ``run`` is version 1 (the first
#: release). Bumped with a step in :func:`migrate`.
SCHEMA_VERSION = 5


class Migrating(Protocol):
    """What a migration needs of the store it runs in (:class:`argusdb.store.embedded.Store`)."""

    path: str
    con: Any

    def add_missing_columns(self) -> list[str]: ...

#: Tables rebuilt from the others (never copied into a snapshot; rebuilt there).
DERIVED = ("attribution_split", "region_attribution", "derived_evidence", "materialization",
           "attribution_pc_line")
#: Tables kept as of a time by a timestamp column of theirs.
_BY_TIME = {"variant_check": "checked_at", "plan": "created_at"}


def parse_version(path: str, raw: object) -> int:
    """The schema version recorded in ``store_meta`` (its text ``raw``), as a whole number
    from 1 up (a newer one than :data:`SCHEMA_VERSION` is the caller's to refuse).

    Raises:
        StoreError: it is not a whole number (``'abc'``), or below 1 (``-1``, ``0``): no
            argusdb wrote it, so nothing can say which migrations the store needs.
    """
    text = str(raw).strip()
    try:
        version = int(text)
    except ValueError:
        version = None
    if version is None or version < 1:
        raise StoreError(f"{path}: its schema version in store_meta is {text!r}, which no "
                         f"argusdb release writes (versions 1 to {SCHEMA_VERSION}); the store "
                         "is damaged or was edited by hand, so argusdb cannot tell how to read "
                         "or migrate it. Restore it from a copy, or create a new store ('argus "
                         "init NEW.duckdb') and ingest the artefacts again.")
    return version


def migrate(store: Migrating, version: int) -> None:
    """Bring a store of schema ``version`` (0: new) to the current one, in the caller's
    transaction, after the schema modules have created any missing table."""
    if version and version < SCHEMA_VERSION:
        store.add_missing_columns()
    if version == 1:
        store.con.execute(
            "INSERT INTO store_snapshot SELECT row_number() OVER (ORDER BY run_seq), "
            "ingested_at, run_seq, 'migrated', [run_id] FROM run ORDER BY run_seq")
    if version and version < 3:
        _recreate(store, "observed_evidence")
    if version and version < 4:
        _own_other_kernels(store)
    store.con.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema_version', ?)",
                      [str(SCHEMA_VERSION)])


def other_kernels_version(kernels_version: str, program_version: str) -> str:
    """The program version of a trace's other kernels (not the program's) in a run of
    ``program_version``: of the kernels (``kernels_version``, the version their names and
    device give) and of the program version together (16 hex chars).

    Example:
        >>> other_kernels_version("c5b8b80ecbab018a", "ee0369be2e320607")
        'ea5beb9a6053b9b7'
    """
    doc = f"other kernels {kernels_version} of {program_version}"
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


def _own_other_kernels(store: Migrating) -> None:
    """Schema 4: each timeline run's kernels get the version of their program run's version
    (see the module docstring), in the caller's transaction."""
    con = store.con
    runs = con.execute(
        "SELECT run_id, program_version, meta->>'$.timeline_of.program_version' FROM run "
        "WHERE meta->>'$.timeline_of.program_version' IS NOT NULL").fetchall()
    keyed = [t for (t,) in con.execute(
        "SELECT table_name FROM duckdb_columns() WHERE schema_name = 'main' "
        "AND column_name IN ('run_id', 'program_version') AND table_name IN "
        "(SELECT table_name FROM duckdb_tables()) GROUP BY table_name "
        "HAVING count(*) = 2 ORDER BY table_name").fetchall()]
    old_versions = set()
    for run_id, old, of in runs:
        if old == of:
            continue
        new = other_kernels_version(old, of)
        old_versions.add(old)
        con.execute(
            "INSERT OR IGNORE INTO program_version SELECT * REPLACE (? AS program_version, "
            "json_object('kernels_of', ?) AS options, json_merge_patch(coalesce(identity, "
            "'{}'), json_object('kernels_of', ?)) AS identity) FROM program_version "
            "WHERE program_version = ?", [new, of, of, old])
        for table in keyed:
            con.execute(f"UPDATE {table} SET program_version = ? WHERE run_id = ?",
                        [new, run_id])
    for old in sorted(old_versions):
        con.execute("DELETE FROM program_version WHERE program_version = ? AND NOT EXISTS "
                    "(SELECT 1 FROM run WHERE program_version = ?)", [old, old])


def _recreate(store: Migrating, table: str) -> None:
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


