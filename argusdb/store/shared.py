"""The shared store: DuckLake tables on a PostgreSQL catalog, Parquet data files, many writers.

A store URI names it wherever a store path is accepted (ingest, query, observe, diff, report,
dashboard, MCP, copy)::

    ducklake:postgres:dbname=argus host=127.0.0.1 data_path=/srv/argus/lake

Everything after ``ducklake:`` is DuckLake's catalog (a libpq connection string after
``postgres:``), except two keys argusdb takes out: ``data_path=`` (where the Parquet files go;
needed when the store is created, then recorded in the catalog, so later URIs may leave it out)
and ``metadata_schema=`` (the Postgres schema of the catalog tables, so one database can hold
several stores). The ``ducklake`` and ``postgres_scanner`` extensions are loaded from the files
of the ``duckdb-extension-ducklake`` and ``duckdb-extension-postgres-scanner`` wheels, and the
writers' lock goes through ``psycopg`` (all three are the ``shared`` extra): nothing is
downloaded at run time.

How it works. The lake is read and written where it lies. Each process has an in-memory DuckDB
with the lake ATTACHed as ``lake``; its ``memory`` database holds no rows, only the checked query
surface: a view per lake table (``run`` is ``SELECT * FROM lake.main.run``) and the views and
macros of ``argusdb/queries/`` over them, so every question, report and materialization runs on
DuckLake's own tables and files (DuckDB pushes filters and projections into the Parquet scans).
A read-only open pins the snapshot that was newest when it opened (``SNAPSHOT_VERSION``):
its answers never change under it, as an embedded store's read-only connection sees its file.
``as_of`` pins an older snapshot (``SNAPSHOT_VERSION`` / ``SNAPSHOT_TIME``).

A write (:meth:`SharedStore.transaction`) is one DuckLake transaction that appends only the
rows of its own runs (and the attribution and derivation rows of the versions they change,
:mod:`argusdb.store.materialize` incrementally) as new Parquet files: nothing of the existing
lake is copied, so memory is bounded by the ingest, not the lake. Writers of one store are
serialized by a PostgreSQL advisory lock named after the store (its ``metadata_schema``), taken
before the transaction begins and released after it commits: a second writer waits (up to
``ARGUS_LOCK_TIMEOUT`` seconds, as for an embedded store's file lock) and then works on the
newest snapshot, so it never redoes work. DuckLake's own conflict check stays as the safety net
(a writer without the lock, e.g. another tool): a conflicting commit is refused and the write
runs again (:meth:`SharedStore.retrying`, bounded). The run sequence is the lake's highest
``run_seq`` plus one, read under the lock.

Faults (:mod:`argusdb.store.faults`). Opening, and a read outside a write, are tried again on a
new connection when PostgreSQL went away (bounded: pauses of 1, 2, 4 s); a write is redone whole.
A lost connection to PostgreSQL (a restart, a network cut) that outlasts that ends with a
:class:`~argusdb.errors.StoreError` that says what happened and what to do (exit 2 and the JSON
envelope at the command line), never a traceback; nothing of the write is stored (DuckLake
commits in one PostgreSQL transaction; Parquet files written before it are unreferenced and
``argus lake expire`` removes them). When the COMMIT itself fails, its acknowledgement may be
what was lost: the store is asked again over a new connection whether the write's runs are
there, and a stored run is reported as stored. A killed writer leaves nothing partial and
releases the lock with its PostgreSQL session.

Upkeep (:mod:`argusdb.store.upkeep`): ``compact`` merges small adjacent data files
(``ducklake_merge_adjacent_files``); ``expire`` expires snapshots older than a time
(``ducklake_expire_snapshots``) and deletes the files no snapshot kept references
(``ducklake_cleanup_old_files``). ``argus lake compact`` and ``argus lake expire`` run them.

Schema versions: a writable open of a lake of an older schema (2 onwards) adds what the newer
``argusdb/schema/`` declares (tables, columns) and its version in one DuckLake commit; a
read-only open (and time travel) reads what the lake holds, later columns NULL.

Example:
    >>> st = open_shared(  # doctest: +SKIP
    ...     "ducklake:postgres:dbname=argus host=127.0.0.1 data_path=/tmp/lake", create=True)
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cache
from typing import Any, TypeVar

import duckdb

from argusdb.errors import LostConnection, StoreConflict, StoreError
from argusdb.schema import catalog
from argusdb.schema.sqltext import literal as _q
from argusdb.store.connect import lock_timeout_s
from argusdb.store.embedded import SCHEMA_VERSION, Store
from argusdb.store.faults import MAX_RECONNECTS, lost_connection, pause, reconnecting
from argusdb.store.faults import first_line as _first
from argusdb.store.guard import READS
from argusdb.store.lake import (
    LakeUri,
    _lake_connect,
    closed_on_failure,
    connect_pinned,
)
from argusdb.store.versions import parse_version, schema_tables

_log = logging.getLogger(__name__)
T = TypeVar("T")

#: The first store schema with shared stores; a lake of it or later migrates on a writable open.
FIRST_SHARED_VERSION = 2
#: Attempts of one write refused by DuckLake's conflict check (a writer without the lock).
MAX_ATTEMPTS = 20
#: Tables a refresh reads and never writes, small (a row per run, version, span, check or
#: task): held in memory while it runs (:meth:`SharedStore.inputs_held`).
HELD = ("run", "program_version", "region_span")


def open_shared(uri: str, create: bool = False, read_only: bool = False,
                as_of: str | None = None, lock_timeout: float | None = None) -> SharedStore:
    """Open (with ``create``, make) the shared store ``uri``; ``as_of`` opens it read-only as
    it stood at that DuckLake snapshot number or time; a read-only open without it pins the
    newest snapshot. ``lock_timeout``: seconds a write waits for another writer's lock
    (default :func:`argusdb.store.connect.lock_timeout_s`).

    Raises:
        StoreError: the lake cannot be reached or opened, or is not an argusdb store.
    """
    lu = LakeUri.parse(uri)
    tries = iter(range(1, MAX_RECONNECTS))

    def told(exc: BaseException) -> bool:
        """A lost connection (a restarting server) is tried again, saying so on stderr."""
        cause = exc.__cause__ if isinstance(exc, StoreError) and exc.__cause__ else exc
        if not lost_connection(cause):
            return False
        n = next(tries, None)
        if n is not None:
            sys.stderr.write(f"argus: {lu.uri}: PostgreSQL did not answer ({_first(cause)}); "
                             f"trying again in {pause(n - 1):g} s\n")
        return True

    return reconnecting(lambda: _open(lu, create, read_only, as_of, lock_timeout), told)


def _open(lu: LakeUri, create: bool, read_only: bool, as_of: str | None,
          lock_timeout: float | None) -> SharedStore:
    if read_only and as_of is None:
        con, as_of = connect_pinned(lu)
    else:
        con = _lake_connect(lu, read_only, as_of, create)
    st = SharedStore(lu, con, read_only or as_of is not None, lock_timeout)
    st.as_of = as_of
    with closed_on_failure(lu, st):
        st.open_lake(create and as_of is None)
    return st


@cache
def reference() -> tuple[dict[str, list[tuple[str, str, str | None]]], dict[str, list[str]]]:
    """What ``argusdb/schema/`` declares: per table its (column, type, default) in order, and
    per keyed table its key columns (DuckLake has no keys; :meth:`SharedStore.insert_rows`
    keeps the first row of a key, as ``INSERT OR IGNORE`` does on an embedded store)."""
    ref = duckdb.connect(":memory:")
    try:
        for mod in catalog.schema_modules():
            ref.execute(mod.text)
        cols: dict[str, list[tuple[str, str, str | None]]] = {}
        for t, c, typ, default in ref.execute(
                "SELECT c.table_name, c.column_name, c.data_type, c.column_default "
                "FROM duckdb_columns() AS c JOIN duckdb_tables() AS t USING (database_name, "
                "schema_name, table_name) WHERE c.schema_name = 'main' "
                "ORDER BY c.table_name, c.column_index").fetchall():
            cols.setdefault(str(t), []).append((str(c), str(typ),
                                                None if default is None else str(default)))
        keys: dict[str, list[str]] = {}
        for t, names in ref.execute(
                "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                "WHERE constraint_type = 'PRIMARY KEY' ORDER BY table_name").fetchall():
            keys[str(t)] = [str(n) for n in names]
    finally:
        ref.close()
    return cols, keys


class SharedStore(Store):
    """A DuckLake store read and written in place (see the module doc)."""

    #: The checker's metadata summaries stay in each connection's memory: a stored one would
    #: be rebuilt from the whole lake after every ingest.
    keeps_summaries = False

    def __init__(self, lu: LakeUri, con: duckdb.DuckDBPyConnection, read_only: bool,
                 lock_timeout: float | None = None) -> None:
        super().__init__(lu.uri, con, read_only)
        self.lake_uri = lu
        #: Schema version of the lake as opened (older only when opened read-only).
        self._lake_version = SCHEMA_VERSION
        self._lock_timeout = lock_timeout
        self._pg: Any = None   # the psycopg session that holds the writers' lock
        self._data_path: str | None = None
        #: Test hook: called with the connection to COMMIT a write (see :meth:`_commit`).
        self.commit_hook: Callable[[duckdb.DuckDBPyConnection], None] | None = None
        #: The snapshot a read-only store is pinned to (kept on a new connection).
        self.as_of: str | None = None
        #: Inside :meth:`transaction` (a lost connection there fails the whole write).
        self._writing = False
        #: Inside :meth:`inputs_held`.
        self._held = False
        #: Per lake table, its columns' types (:meth:`ensure_schema`).
        self._typed: dict[str, dict[str, str]] = {}

    @property
    def lake(self) -> duckdb.DuckDBPyConnection:
        """The connection the lake is attached to (as ``lake``)."""
        return self.con

    def close(self) -> None:
        self._unlock()
        with suppress(duckdb.Error):
            super().close()

    # -- reading ---------------------------------------------------------------------------
    def sql(self, query: str, params: Sequence[Any] | None = None) -> duckdb.DuckDBPyConnection:
        return self._read(lambda: super(SharedStore, self).sql(query, params), query)

    def arrow(self, query: str, params: Sequence[Any] | None = None) -> Any:
        return self._read(lambda: super(SharedStore, self).arrow(query, params), query)

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        return self._read(lambda: super(SharedStore, self).rows(query, params), query)

    def _read(self, run: Callable[[], T], query: str) -> T:
        """A read outside a write whose connection was lost runs again on a new one (see
        :mod:`argusdb.store.faults`); inside a write the loss fails the write, which
        :meth:`retrying` redoes whole; a statement that is not a read is never repeated."""
        if self._writing or query.lstrip().split(None, 1)[0].upper() not in READS:
            return run()
        try:
            return reconnecting(run, lost_connection, self._try_reconnect)
        except duckdb.Error as exc:
            if not lost_connection(exc):
                raise
            raise LostConnection(f"{self.path}: lost the connection to PostgreSQL and could "
                                 f"not reach it again ({_first(exc)}). Check that PostgreSQL "
                                 "is up, then run the command again.") from exc

    def _try_reconnect(self) -> None:
        with suppress(duckdb.Error, StoreError):
            self._reconnect()

    # -- opening ---------------------------------------------------------------------------
    def _lake_tables(self) -> set[str]:
        return {t for (t,) in self.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()}

    def open_lake(self, create: bool) -> None:
        """Check the lake's schema version, create or complete it, and make the query
        surface over it."""
        tables = self._lake_tables()
        if not tables:
            if not create or self.read_only:
                raise StoreError(f"{self.path}: no argusdb store there yet. Create it "
                                 f"with: argus init {_q(self.path)}")
            with self._writer():
                if not self._lake_tables():
                    self._create_lake(schema_tables())
            tables = self._lake_tables()
        if "store_meta" not in tables or "run" not in tables:
            raise StoreError(f"{self.path}: a DuckLake that is not an argusdb store "
                             f"(tables {sorted(tables)[:5]}). Use another "
                             "metadata_schema= or database.")
        version = self._version()
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: written by a newer argusdb (store schema "
                             f"{version}; this release reads schema {SCHEMA_VERSION}). "
                             "Upgrade argusdb to open it.")
        if version < FIRST_SHARED_VERSION:
            raise StoreError(f"{self.path}: store schema {version} predates shared "
                             f"stores (schema {FIRST_SHARED_VERSION}); copy an "
                             "embedded store in with 'argus copy' instead.")
        missing = [t for t in schema_tables() if t not in tables]
        if not self.read_only and (version < SCHEMA_VERSION or missing):
            with self._writer():
                if self._version() < SCHEMA_VERSION or \
                        [t for t in schema_tables() if t not in self._lake_tables()]:
                    self._migrate_lake(self._lake_tables())
            version = self._version()
        self._lake_version = version
        self.ensure_schema(version)

    def _version(self) -> int:
        row = self.con.execute("SELECT value FROM lake.store_meta "
                               "WHERE key = 'schema_version'").fetchone()
        return parse_version(self.path, row[0]) if row else 0

    def _lake_columns(self, table: str) -> set[str]:
        return {c for (c,) in self.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake' "
            "AND table_name = ?", [table]).fetchall()}

    def ensure_schema(self, version: int = SCHEMA_VERSION, rebuild: bool = False) -> None:
        """Make the query surface in this process's memory: a view per lake table (columns
        an older lake lacks read NULL) and the views and macros of ``argusdb/queries/``
        (always made anew: ``rebuild`` changes nothing here).

        The modules' views are bound (at CREATE) against empty views of the tables' types,
        then the table views are pointed at the lake: DuckDB binds a view again where it is
        used, and binding the modules over DuckLake itself asks PostgreSQL for every table's
        statistics at each reference (~20 s a command on a loaded machine, against ~1 s).
        """
        typed: dict[str, dict[str, str]] = {}
        for t, c, typ in self.con.execute(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() "
                "WHERE database_name = 'lake' AND schema_name = 'main'").fetchall():
            typed.setdefault(str(t), {})[str(c)] = str(typ)
        self._typed = typed
        for t in schema_tables():
            self.con.execute(self._view(t, empty=True))
        for mod in catalog.query_modules():
            self.con.execute(mod.text)
        for t in schema_tables():
            self.con.execute(self._view(t, empty=False))
        if not self.read_only:
            # Writes name the lake's tables; views and macros resolve in memory.
            self.con.execute("SET search_path = 'lake.main,memory.main'")

    def _view(self, t: str, empty: bool = False, src: str | None = None) -> str:
        """The query surface's view of lake table ``t``: its columns (NULL where the lake
        lacks one); ``empty``: no rows (binding only); ``src``: read from there instead."""
        got = self._typed.get(t, {})
        sel = ", ".join(f'"{c}"' if c in got and not empty else
                        f'NULL::{got.get(c, typ)} AS "{c}"' for c, typ, _ in reference()[0][t])
        frm = f" FROM {src or f'lake.main.{t}'}" if t in self._typed and not empty \
            else " WHERE false"
        return f"CREATE OR REPLACE VIEW memory.main.{t} AS SELECT {sel}{frm}"

    @contextmanager
    def inputs_held(self) -> Iterator[None]:
        """The small tables a refresh reads and never writes (:data:`HELD`), read once from
        the lake (with the transaction's own rows) into memory, and the query surface's views
        of them pointed there until it ends: the materializations' statements name ``run``
        a score of times, and DuckLake asks PostgreSQL for a table's files and statistics at
        every reference (~480 catalog queries an ingest, against ~150)."""
        if self._held or not self._writing:
            yield
            return
        held = [t for t in HELD if t in self._typed]
        try:
            for t in held:
                self.con.execute(f"CREATE OR REPLACE TEMP TABLE {t} AS "
                                 f"FROM memory.main.{t}")
            self._held = True
            yield
        finally:
            self._held = False
            for t in held:
                with suppress(duckdb.Error):
                    self.con.execute(f"DROP TABLE IF EXISTS temp.main.{t}")

    def _migrate_lake(self, tables: set[str]) -> None:
        """Bring a lake of an older schema to this one in one commit: the tables and columns
        ``argusdb/schema/`` declares that it lacks (columns NULL for the rows held), then its
        ``schema_version`` (see :mod:`argusdb.store.versions`)."""
        cols, _ = reference()
        self.con.execute("BEGIN")
        try:
            for t in schema_tables():
                if t not in tables:
                    self._create_table(t)
                    continue
                have = self._lake_columns(t)
                for col, typ, _ in cols[t]:
                    if col not in have:
                        self.con.execute(f'ALTER TABLE lake.{t} ADD COLUMN "{col}" {typ}')
            self.con.execute("UPDATE lake.store_meta SET value = ? WHERE key = "
                             "'schema_version'", [str(SCHEMA_VERSION)])
            self.con.execute("CALL lake.set_commit_message('argus', 'migrate', "
                             "extra_info => ?)", [json.dumps({"schema": SCHEMA_VERSION})])
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            with suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            raise StoreError(f"{self.path}: migrating the schema failed ({_first(exc)}); "
                             "open it again") from exc

    def _create_table(self, table: str) -> None:
        cols, _ = reference()
        self.con.execute(f"CREATE TABLE IF NOT EXISTS lake.{table} (" + ", ".join(
            f'"{c}" {t}' for c, t, _ in cols[table]) + ")")

    def _create_lake(self, tables: list[str]) -> None:
        """Create ``tables`` in the lake (the DDL's column types) in one commit."""
        self.con.execute("BEGIN")
        try:
            for t in tables:
                self._create_table(t)
            if "store_meta" in tables:
                self.con.execute("INSERT INTO lake.store_meta VALUES ('schema_version', ?)",
                                 [str(SCHEMA_VERSION)])
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            with suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            raise StoreError(f"{self.path}: creating the store's tables failed "
                             f"({_first(exc)}); run the command again") from exc

    def lock_down(self, memory_limit: str | None = None, threads: int | None = None) -> None:
        """:meth:`Store.lock_down`, with the lake's data path the one place DuckDB may still
        read and write files (DuckLake's Parquet files)."""
        if not self._locked:
            row = self.con.execute("SELECT current_setting('lock_configuration')").fetchone()
            if not (row and row[0]):
                path = self.data_path()
                if path and "://" not in path:
                    self.con.execute(f"SET allowed_directories = [{_q(path)}]")
        super().lock_down(memory_limit, threads)

    def data_path(self) -> str | None:
        """Where the lake's data files are (as its catalog records it)."""
        if self._data_path is None:
            with suppress(duckdb.Error):
                row = self.con.execute("SELECT value FROM ducklake_options('lake') "
                                       "WHERE option_name = 'data_path'").fetchone()
                self._data_path = str(row[0]) if row and row[0] else self.lake_uri.data_path
        return self._data_path

    # -- the writers' lock -------------------------------------------------------------------
    def _lock_session(self) -> Any:
        import psycopg

        info = self.lake_uri.conninfo or ""
        try:
            return psycopg.connect(info, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise LostConnection(f"{self.path}: cannot reach PostgreSQL for the writers' lock "
                             f"({_first(exc)}); check that it is running, then run the "
                             "command again") from exc

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """Hold the store's advisory lock (waiting for another writer up to the lock wait)."""
        if self.lake_uri.conninfo is None:   # another catalog: DuckLake's conflict check only
            yield
            return
        import psycopg

        timeout = lock_timeout_s() if self._lock_timeout is None else self._lock_timeout
        deadline = time.monotonic() + timeout
        told = renewed = False
        pause = 0.01
        while True:
            if self._pg is None or self._pg.closed:
                self._pg = self._lock_session()
            try:
                row = self._pg.execute("SELECT pg_try_advisory_lock(%s)",
                                       [self.lake_uri.lock_key]).fetchone()
            except psycopg.Error as exc:
                self._unlock()   # a session PostgreSQL ended (a restart): one new one
                if not renewed:
                    renewed = True
                    continue
                raise LostConnection(f"{self.path}: lost the connection to PostgreSQL while "
                                 f"waiting for the writers' lock ({_first(exc)}); nothing "
                                 "was written. Run the command again.") from exc
            if row and row[0]:
                break
            if time.monotonic() >= deadline:
                raise StoreError(f"{self.path}: another writer still holds the store's lock "
                                 f"after {timeout:g} s. Wait for it to finish, or raise "
                                 "ARGUS_LOCK_TIMEOUT (seconds).")
            if not told:
                sys.stderr.write(f"argus: {self.path} is being written by another process; "
                                 f"waiting up to {timeout:g} s (ARGUS_LOCK_TIMEOUT)\n")
                told = True
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 1.5, 0.2)
        try:
            yield
        finally:
            with suppress(Exception):
                self._pg.execute("SELECT pg_advisory_unlock(%s)", [self.lake_uri.lock_key])

    def _unlock(self) -> None:
        if self._pg is not None:
            with suppress(Exception):
                self._pg.close()
            self._pg = None

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write: one DuckLake transaction under the writers' lock.

        Raises:
            StoreConflict: DuckLake refused the commit (a writer without the lock committed
                first); :meth:`retrying` runs the write again.
            StoreError: the connection to PostgreSQL was lost and the write is not stored.
        """
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only (or as of a snapshot); "
                             "it cannot be written")
        with self._lock, self._writer():
            try:
                self.reset_run_seq()
                self.con.execute("BEGIN")
            except duckdb.Error as exc:
                raise self._write_error(exc) from exc
            self._new_runs = []
            self._appended = False
            self._writing = True
            try:
                yield self.con
                self._before_commit()
            except BaseException as exc:
                with suppress(duckdb.Error):
                    self.con.execute("ROLLBACK")
                self._new_runs = []
                if isinstance(exc, duckdb.Error):
                    raise self._write_error(exc) from exc
                raise
            finally:
                self._writing = False
            runs, self._new_runs = self._new_runs, []
            try:
                self._commit()
            except duckdb.Error as exc:
                self._resolve_commit(runs, exc)
            self.generation += 1

    def _commit(self) -> None:
        if self.commit_hook is not None:
            self.commit_hook(self.con)
        else:
            self.con.execute("COMMIT")

    def _before_commit(self) -> None:
        """The commit's message: 'ingest' with the runs it adds (``argus runs --snapshots``)."""
        self.con.execute("CALL lake.set_commit_message('argus', ?, extra_info => ?)",
                         ["ingest" if self._new_runs else "write",
                          json.dumps({"runs": self._new_runs})])

    def _write_error(self, exc: duckdb.Error) -> StoreError:
        text = _first(exc)
        if isinstance(exc, duckdb.TransactionException) or "onflict" in text:
            return StoreConflict(f"{self.path}: another writer committed first ({text}); "
                                 "run the write again")
        if lost_connection(exc):
            return LostConnection(f"{self.path}: lost the connection to PostgreSQL during the "
                                  f"write ({text}); nothing of it was stored. Check that "
                                  "PostgreSQL is up, then run the command again.")
        return StoreError(f"{self.path}: the shared store refused the write ({text})")

    def _resolve_commit(self, runs: list[str], exc: duckdb.Error) -> None:
        """The COMMIT failed: find out, over a new connection, whether it happened."""
        err = self._write_error(exc)
        if isinstance(err, StoreConflict) or not runs:
            raise err from exc
        present: set[str] | None = None
        for i in range(MAX_RECONNECTS):
            try:
                with open_shared(self.path, read_only=True) as fresh:
                    present = fresh.runs_present(runs)
                break
            except StoreError:
                time.sleep(pause(i))
        if present is not None and present == set(runs):
            _log.warning("%s: the commit's acknowledgement was lost (%s); its runs %s are "
                         "stored", self.path, _first(exc), ", ".join(runs))
            self._reconnect()
            return
        if present is None:
            raise StoreError(f"{self.path}: lost the connection to PostgreSQL while committing "
                             f"runs {', '.join(runs)} ({_first(exc)}) and could not reach it "
                             "again to check whether they were stored. Once it is up, "
                             "'argus runs STORE' says; running the same ingest again stores "
                             "what is missing and nothing twice.") from exc
        self._reconnect()
        raise err from exc

    def _reconnect(self) -> None:
        """A new connection to the lake (the old one's PostgreSQL session is gone)."""
        old = self.con
        self.con = _lake_connect(self.lake_uri, self.read_only, self.as_of)
        self._data_path = None
        self._locked = False
        self.checker_metadata = None
        self._table_columns = {}
        self.ensure_schema(self._lake_version)
        with suppress(duckdb.Error):
            old.close()
        self.generation += 1

    def retrying(self, attempt: Callable[[], Any]) -> Any:
        """Run ``attempt()`` (one whole write); again when DuckLake refused its commit, or
        the connection to PostgreSQL was lost before it committed (bounded: the pauses grow
        to a few seconds, as a restarting server needs)."""
        lost = 0
        for i in range(MAX_ATTEMPTS):
            try:
                return attempt()
            except LostConnection:
                lost += 1
                if lost >= MAX_RECONNECTS:
                    raise
                time.sleep(pause(lost))
                with suppress(duckdb.Error, StoreError):
                    self._reconnect()
            except StoreConflict:
                time.sleep(random.uniform(0, min(0.05 * (i + 1), 1.0)))
        raise StoreError(f"{self.path}: {MAX_ATTEMPTS} attempts conflicted with other writers; "
                         "run the command again")

    def reset_run_seq(self) -> None:
        """The run sequence: after the lake's highest run_seq (read under the writers' lock)."""
        row = self.con.execute("SELECT coalesce(max(run_seq), 0) + 1 FROM lake.main.run"
                               ).fetchone()
        start = int(row[0]) if row else 1
        self.con.execute(f"CREATE OR REPLACE TEMP SEQUENCE run_seq_gen START {start}")

    def _column_defaults(self, table: str) -> list[tuple[str, str | None]]:
        """The lake table's columns in its order (a migrated lake has the newer columns last),
        each with its DDL default: an append inserts by position."""
        got = self._table_columns.get(table)
        if got is None:
            cols, _ = reference()
            default = {c: d for c, _, d in cols[table]}
            got = self._table_columns[table] = [(str(c), default.get(str(c))) for (c,) in
                                                self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake' AND "
                "table_name = ? ORDER BY column_index", [table]).fetchall()]
        return got

    def insert_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """:meth:`Store.insert_rows`: a keyed table keeps the row a key already has (the first
        of the command's, else the one stored), as ``INSERT OR IGNORE`` does on an embedded
        store; a column a row leaves out takes its DDL default."""
        cols, keys = reference()
        key = keys.get(table)
        out: list[dict[str, Any]] = []
        if key:
            seen: set[tuple[Any, ...]] = set()
            for r in rows:
                k = tuple(r.get(c) for c in key)
                if k not in seen:
                    seen.add(k)
                    out.append(r)
            if out:
                stored = {tuple(r) for r in self.con.execute(
                    f"SELECT {', '.join(key)} FROM {table} WHERE list_contains(?, {key[0]})",
                    [sorted({str(r.get(key[0])) for r in out})]).fetchall()}
                out = [r for r in out if tuple(r.get(c) for c in key) not in stored]
        else:
            out = list(rows)
        defaults = {c: d for c, _, d in cols[table] if d is not None}
        if defaults and out:
            values = {c: self.con.execute(f"SELECT {d}").fetchone()[0]  # type: ignore[index]
                      for c, d in defaults.items()}
            out = [{**{c: v for c, v in values.items() if c not in r}, **r} for r in out]
        if out:
            super().insert_rows(table, out)

    def insert_row(self, table: str, row: dict[str, Any]) -> None:
        self.insert_rows(table, [row])

    def snapshot_identity(self) -> str | None:
        """What the data of a store pinned to a snapshot number is a function of: a digest of
        the catalog (no password written anywhere), its schema and data path, the snapshot and
        the time it was committed (a lake made again under the same name has other times);
        None for a writable store or one pinned by time. A DuckLake snapshot never changes,
        so checks kept under it stay true (:mod:`argusdb.api.kept`)."""
        if not self.read_only or self.as_of is None or not self.as_of.isdigit():
            return None
        # as text, with no parameter: a TIMESTAMPTZ handed to Python imports pytz, and
        # DuckDB's binding of a Python parameter imports pandas where it is installed (~1.4 s
        # CPU of a question's process)
        row = self.con.execute("SELECT snapshot_time::VARCHAR FROM lake.snapshots() "
                               f"WHERE snapshot_id = {int(self.as_of)}").fetchone()
        if row is None:
            return None
        lu = self.lake_uri
        catalog = hashlib.sha256(lu.catalog.encode()).hexdigest()[:32]
        return (f"ducklake:{catalog}:{lu.metadata_schema or ''}:{lu.data_path or ''}:"
                f"snapshot {int(self.as_of)} at {row[0]}")

    def snapshots(self) -> list[dict[str, Any]]:
        """DuckLake's snapshots, oldest first, with the runs each commit added (times in
        UTC, without a time zone: no pytz needed)."""
        out = []
        for sid, at, message, extra in self.con.execute(
                "SELECT snapshot_id, timezone('UTC', snapshot_time), commit_message, "
                "commit_extra_info FROM lake.snapshots() ORDER BY snapshot_id").fetchall():
            runs = json.loads(extra).get("runs", []) if extra else []
            out.append({"snapshot_id": sid, "committed_at": at,
                        "kind": message or "schema", "run_ids": runs})
        return out
