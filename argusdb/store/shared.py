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

Faults. A lost connection to PostgreSQL (a restart, a network cut) ends the write with a
:class:`~argusdb.errors.StoreError` that says what happened and what to do (exit 2 and the JSON
envelope at the command line), never a traceback; nothing of the write is stored (DuckLake
commits in one PostgreSQL transaction; Parquet files written before it are unreferenced and
``argus lake expire`` removes them). When the COMMIT itself fails, its acknowledgement may be
what was lost: the store is asked again over a new connection whether the write's runs are
there, and a stored run is reported as stored. A killed writer leaves nothing partial and
releases the lock with its PostgreSQL session.

Upkeep: :func:`compact` merges small adjacent data files (``ducklake_merge_adjacent_files``);
:func:`expire` expires snapshots older than a time (``ducklake_expire_snapshots``) and deletes
the files no snapshot kept references (``ducklake_cleanup_old_files``). ``argus lake compact``
and ``argus lake expire`` run them.

Schema versions: a writable open of a lake of an older schema (2 onwards) adds what the newer
``argusdb/schema/`` declares (tables, columns) and its version in one DuckLake commit; a
read-only open (and time travel) reads what the lake holds, later columns NULL.

Example:
    >>> st = open_shared(  # doctest: +SKIP
    ...     "ducklake:postgres:dbname=argus host=127.0.0.1 data_path=/tmp/lake", create=True)
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import random
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from argusdb.errors import LostConnection, StoreConflict, StoreError
from argusdb.schema import catalog
from argusdb.schema.sqltext import literal as _q
from argusdb.store.connect import NOT_TRIED_COMPRESSION, SHARED_PREFIX, lock_timeout_s
from argusdb.store.embedded import SCHEMA_VERSION, Store
from argusdb.store.versions import parse_time, parse_version, schema_tables

_log = logging.getLogger(__name__)

#: Extension wheels (package, extension name) loaded from their files, in load order.
EXTENSIONS = (("duckdb_extension_postgres_scanner", "postgres_scanner"),
              ("duckdb_extension_ducklake", "ducklake"))
#: The first store schema with shared stores; a lake of it or later migrates on a writable open.
FIRST_SHARED_VERSION = 2
#: Attempts of one write refused by DuckLake's conflict check (a writer without the lock).
MAX_ATTEMPTS = 20
#: Attempts of one write whose connection to PostgreSQL was lost before it committed; the
#: pauses between them grow to ~8 s (a restarting server needs a few seconds).
MAX_RECONNECTS = 4
_OWN_KEYS = ("data_path", "metadata_schema")
#: What DuckDB's and psycopg's messages say when PostgreSQL went away.
_LOST = re.compile(r"connection|server closed|terminating|could not receive|could not send|"
                   r"SSL SYSCALL|broken pipe|EOF detected|admin_shutdown|shutting down|"
                   r"the database system is|Connection refused|no connection",
                   re.IGNORECASE)


@dataclass(frozen=True)
class LakeUri:
    """A parsed ``ducklake:`` store URI."""

    uri: str
    catalog: str
    data_path: str | None
    metadata_schema: str | None

    @classmethod
    def parse(cls, uri: str) -> LakeUri:
        rest = uri[len(SHARED_PREFIX):].strip()
        own: dict[str, str] = {}
        kept: list[str] = []
        for tok in rest.split():
            key, sep, val = tok.partition("=")
            if sep and key in _OWN_KEYS:
                own[key] = val
            else:
                kept.append(tok)
        catalog_ = " ".join(kept)
        if not catalog_:
            raise StoreError(f"{uri}: names no DuckLake catalog. Write e.g. "
                             "'ducklake:postgres:dbname=argus host=127.0.0.1 "
                             "data_path=/srv/argus/lake'.")
        return cls(uri, catalog_, own.get("data_path"), own.get("metadata_schema"))

    @property
    def conninfo(self) -> str | None:
        """The libpq connection string of a PostgreSQL catalog (None for another catalog)."""
        if self.catalog.startswith("postgres:"):
            return self.catalog[len("postgres:"):].strip()
        return None

    @property
    def lock_key(self) -> int:
        """The advisory lock of this store: a 64-bit hash of its name in the database."""
        name = f"argusdb store {self.metadata_schema or 'public'}"
        return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to PostgreSQL went away (not a refused statement)."""
    return bool(_LOST.search(str(exc))) and not isinstance(exc, duckdb.CatalogException)


def extension_files() -> list[Path]:
    """The extension files of the installed wheels, for this DuckDB.

    Raises:
        StoreError: a wheel is missing (install argusdb's ``shared`` extra).
    """
    out = []
    for pkg, name in EXTENSIONS:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise StoreError(f"a shared store needs the {pkg.replace('_', '-')} wheel. Install "
                             f"it with: pip install 'argusdb[shared]'")
        f = (Path(next(iter(spec.submodule_search_locations))) / "extensions" /
             f"v{duckdb.__version__}" / f"{name}.duckdb_extension")
        if not f.is_file():
            raise StoreError(f"{f}: missing; the installed {pkg} wheel is not built for DuckDB "
                             f"{duckdb.__version__}. Install the matching one "
                             f"(pip install 'argusdb[shared]').")
        out.append(f)
    return out


def _attach_error(lu: LakeUri, exc: Exception) -> StoreError:
    text = str(exc)
    if "explicitly disabled" in text:
        fix = f"no argusdb store there yet. Create it with: argus init {_q(lu.uri)}"
    elif "data_path is not set" in text:
        fix = "add data_path=DIR to the URI to create the store there"
    elif "does not exist" in text or "creating a new DuckLake" in text:
        fix = f"create it first with: argus init {_q(lu.uri)} (with data_path=DIR)"
    elif "snapshot" in text.lower():
        fix = "'argus runs STORE --snapshots' lists the snapshots"
    else:
        fix = ("check that PostgreSQL is running and the connection string is right "
               "(host, port, dbname, user)")
    return StoreError(f"{lu.uri}: cannot open the shared store ({_first(exc)}); {fix}.")


def _snapshot_opt(as_of: str) -> str:
    spec = as_of.strip()
    if spec.isdigit():
        return f"SNAPSHOT_VERSION {int(spec)}"
    return f"SNAPSHOT_TIME {_q(parse_time(spec).isoformat(sep=' ') + '+00')}"


def _lake_connect(lu: LakeUri, read_only: bool, as_of: str | None = None,
                  create: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake attached as ``lake`` (see the module doc)."""
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False,
                                             "allow_community_extensions": False})
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET disabled_compression_methods = '{NOT_TRIED_COMPRESSION}'")
    for f in extension_files():
        con.execute(f"LOAD {_q(str(f))}")
    opts = []
    if lu.data_path:
        opts.append(f"DATA_PATH {_q(lu.data_path)}")
    if lu.metadata_schema:
        opts.append(f"METADATA_SCHEMA {_q(lu.metadata_schema)}")
    if as_of is not None:
        opts.append(_snapshot_opt(as_of))
    if read_only or as_of is not None:
        opts.append("READ_ONLY")
    elif not create:
        opts.append("CREATE_IF_NOT_EXISTS false")
    try:
        con.execute(f"ATTACH {_q('ducklake:' + lu.catalog)} AS lake ({', '.join(opts)})")
    except duckdb.Error as exc:
        con.close()
        raise _attach_error(lu, exc) from exc
    return con


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
    if read_only and as_of is None:
        probe = _lake_connect(lu, True)
        try:
            row = probe.execute("SELECT id FROM lake.current_snapshot()").fetchone()
        except duckdb.Error as exc:
            raise _attach_error(lu, exc) from exc
        finally:
            probe.close()
        as_of = str(int(row[0])) if row else None
    con = _lake_connect(lu, read_only, as_of, create)
    st = SharedStore(lu, con, read_only or as_of is not None, lock_timeout)
    try:
        st.open_lake(create and as_of is None)
    except duckdb.Error as exc:
        st.close()
        raise _attach_error(lu, exc) from exc
    except BaseException:
        st.close()
        raise
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

    @property
    def lake(self) -> duckdb.DuckDBPyConnection:
        """The connection the lake is attached to (as ``lake``)."""
        return self.con

    def close(self) -> None:
        self._unlock()
        with suppress(duckdb.Error):
            super().close()

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
        cols, _ = reference()
        typed: dict[str, dict[str, str]] = {}
        for t, c, typ in self.con.execute(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() "
                "WHERE database_name = 'lake' AND schema_name = 'main'").fetchall():
            typed.setdefault(str(t), {})[str(c)] = str(typ)

        def view(t: str, empty: bool) -> str:
            got = typed.get(t, {})
            sel = ", ".join(f'"{c}"' if c in got and not empty else
                            f'NULL::{got.get(c, typ)} AS "{c}"' for c, typ, _ in cols[t])
            src = f" FROM lake.main.{t}" if t in typed and not empty else " WHERE false"
            return f"CREATE OR REPLACE VIEW memory.main.{t} AS SELECT {sel}{src}"

        for t in schema_tables():
            self.con.execute(view(t, empty=True))
        for mod in catalog.query_modules():
            self.con.execute(mod.text)
        for t in schema_tables():
            self.con.execute(view(t, empty=False))
        if not self.read_only:
            # Writes name the lake's tables; views and macros resolve in memory.
            self.con.execute("SET search_path = 'lake.main,memory.main'")

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
                time.sleep(min(2.0 ** i, 8.0))
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
        self.con = _lake_connect(self.lake_uri, self.read_only)
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
                time.sleep(min(2.0 ** lost, 8.0))
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


def compact(path: str) -> dict[str, int]:
    """Merge a shared store's small adjacent data files (``ducklake_merge_adjacent_files``),
    under the writers' lock; the data files before and after. Every snapshot still reads
    the same rows; the merged files stay on disk for older snapshots until :func:`expire`.
    """
    st = open_shared(path)
    try:
        with st._lock, st._writer():
            before = _files(st)
            st.con.execute("CALL ducklake_merge_adjacent_files('lake')")
            return {"files_before": before, "files_after": _files(st)}
    except duckdb.Error as exc:
        raise StoreError(f"{path}: compacting failed ({_first(exc)}); nothing changed. "
                         "Check that PostgreSQL is up and run it again.") from exc
    finally:
        st.close()


def expire(path: str, older_than: str) -> dict[str, int]:
    """Expire a shared store's snapshots committed before ``older_than`` (an ISO time in UTC)
    and delete the data files no remaining snapshot reads (DuckLake keeps the newest snapshot
    always). The store's rows now are untouched; ``--as-of`` earlier than the oldest kept
    snapshot is no longer answered. Returns the snapshots expired, files deleted, snapshots
    kept."""
    at = parse_time(older_than).isoformat(sep=" ") + "+00"
    st = open_shared(path)
    try:
        with st._lock, st._writer():
            expired = st.con.execute("CALL ducklake_expire_snapshots('lake', older_than => "
                                     f"{_q(at)}::TIMESTAMPTZ)").fetchall()
            deleted = st.con.execute("CALL ducklake_cleanup_old_files('lake', "
                                     "cleanup_all => true)").fetchall()
            return {"snapshots_expired": len(expired), "files_deleted": len(deleted),
                    "snapshots_kept": len(st.snapshots())}
    except duckdb.Error as exc:
        raise StoreError(f"{path}: expiring snapshots failed ({_first(exc)}); nothing "
                         "changed. Check that PostgreSQL is up and run it again.") from exc
    finally:
        st.close()


def _files(st: SharedStore) -> int:
    n = 0
    for t in sorted(st._lake_tables()):
        row = st.con.execute(f"SELECT count(*) FROM ducklake_list_files('lake', {_q(t)})"
                             ).fetchone()
        n += int(row[0]) if row else 0
    return n
