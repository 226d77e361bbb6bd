"""The shared store: DuckLake tables on a PostgreSQL catalog, Parquet data files, many writers.

A store URI names it wherever a store path is accepted (ingest, query, observe, diff, report,
dashboard, MCP, copy)::

    ducklake:postgres:dbname=argus host=127.0.0.1 data_path=/srv/argus/lake

Everything after ``ducklake:`` is DuckLake's catalog (a libpq connection string after
``postgres:``), except two keys argusdb takes out: ``data_path=`` (where the Parquet files go;
needed when the store is created, then recorded in the catalog) and ``metadata_schema=`` (the
Postgres schema of the catalog tables, so one database can hold several stores). The ``ducklake``
and ``postgres_scanner`` extensions are loaded from the files of the ``duckdb-extension-ducklake``
and ``duckdb-extension-postgres-scanner`` wheels (the ``shared`` extra): nothing is downloaded at
run time.

How it works. Each process keeps a working copy of the store in an in-memory DuckDB, loaded
from one DuckLake snapshot; every question, and the whole existing ingest and materialization
code, runs on that copy unchanged. A write (one :meth:`SharedStore.transaction`) commits to the
copy, then pushes its difference (rows added and rows removed, per table) to DuckLake in one
DuckLake transaction that also bumps the ``store_meta`` row ``commits``. Two writers that
overlap therefore always conflict on that row and DuckLake refuses the second commit: the loser
reloads the new snapshot and runs its whole ingest again (:meth:`SharedStore.retrying`), where
``run_exists`` sees the winner's run. So writers are serialized at commit, run identity and
"same bytes again is a no-op" hold without primary keys, and a killed writer leaves nothing
(DuckLake commits in one Postgres transaction; Parquet files written before are unreferenced).

Schema versions: a writable open of a lake of an older schema (2 onwards) adds what the newer
``argusdb/schema/`` declares (tables, columns) and its version in one DuckLake commit; a
read-only open (and time travel) loads what the lake holds, later columns NULL.

Time travel: ``as_of`` attaches DuckLake at that snapshot (``SNAPSHOT_VERSION``) or time
(``SNAPSHOT_TIME``), read-only; attribution and derivation are stored tables, so they are read
as they stood.

Example:
    >>> st = open_shared(  # doctest: +SKIP
    ...     "ducklake:postgres:dbname=argus host=127.0.0.1 data_path=/tmp/lake", create=True)
"""

from __future__ import annotations

import importlib.util
import json
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from argusdb.errors import StoreConflict, StoreError
from argusdb.schema.sqltext import literal as _q
from argusdb.store.connect import SHARED_PREFIX
from argusdb.store.embedded import SCHEMA_VERSION, Store
from argusdb.store.versions import parse_time, parse_version, schema_tables

#: Extension wheels (package, extension name) loaded from their files, in load order.
EXTENSIONS = (("duckdb_extension_postgres_scanner", "postgres_scanner"),
              ("duckdb_extension_ducklake", "ducklake"))
#: The first store schema with shared stores; a lake of it or later migrates on a writable open.
FIRST_SHARED_VERSION = 2
#: Attempts of one write before giving up (each conflict reloads and reruns it).
MAX_ATTEMPTS = 200
_OWN_KEYS = ("data_path", "metadata_schema")


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
        catalog = " ".join(kept)
        if not catalog:
            raise StoreError(f"{uri}: names no DuckLake catalog. Write e.g. "
                             "'ducklake:postgres:dbname=argus host=127.0.0.1 "
                             "data_path=/srv/argus/lake'.")
        return cls(uri, catalog, own.get("data_path"), own.get("metadata_schema"))



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


def _lake_connect(lu: LakeUri, read_only: bool, as_of: str | None = None,
                  create: bool = False) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    con.execute("SET enable_progress_bar = false")
    for f in extension_files():
        con.execute(f"LOAD {_q(str(f))}")
    opts = []
    if lu.data_path:
        opts.append(f"DATA_PATH {_q(lu.data_path)}")
    if lu.metadata_schema:
        opts.append(f"METADATA_SCHEMA {_q(lu.metadata_schema)}")
    if as_of is not None:
        spec = as_of.strip()
        opts.append(f"SNAPSHOT_VERSION {int(spec)}" if spec.isdigit() else
                    f"SNAPSHOT_TIME {_q(parse_time(spec).isoformat(sep=' ') + '+00')}")
    if read_only or as_of is not None:
        opts.append("READ_ONLY")
    elif not create:
        opts.append("CREATE_IF_NOT_EXISTS false")
    try:
        con.execute(f"ATTACH {_q('ducklake:' + lu.catalog)} AS lake ({', '.join(opts)})")
    except duckdb.Error as exc:
        con.close()
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
        raise StoreError(f"{lu.uri}: cannot open the shared store ({text.splitlines()[0]}); "
                         f"{fix}.") from exc
    return con


def open_shared(uri: str, create: bool = False, read_only: bool = False,
                as_of: str | None = None) -> SharedStore:
    """Open (with ``create``, make) the shared store ``uri``; ``as_of`` opens it read-only as
    it stood at that DuckLake snapshot number or time."""
    lu = LakeUri.parse(uri)
    lake = _lake_connect(lu, read_only, as_of, create)
    st = SharedStore(lu, lake, read_only or as_of is not None)
    try:
        st.open_lake(create and as_of is None)
    except BaseException:
        st.close()
        raise
    return st


class SharedStore(Store):
    """A DuckLake store seen through an in-memory working copy (see the module doc)."""

    def __init__(self, lu: LakeUri, lake: duckdb.DuckDBPyConnection, read_only: bool) -> None:
        work = duckdb.connect(":memory:")
        work.execute("SET enable_progress_bar = false")
        work.execute("ATTACH ':memory:' AS argus_base")
        super().__init__(lu.uri, work, read_only)
        self.lake = lake
        self.lake_uri = lu
        #: The DuckLake snapshot the working copy holds.
        self.lake_snapshot = -1
        self._cols: dict[str, list[str]] = {}
        #: Schema version of the lake as opened (older only when opened read-only).
        self._lake_version = SCHEMA_VERSION
        self._attempting = False
        self.ensure_schema(0)
        self.read_only = read_only

    def close(self) -> None:
        with suppress(duckdb.Error):
            self.lake.close()
        super().close()

    # -- opening ---------------------------------------------------------------------------
    def _lake_tables(self) -> set[str]:
        return {t for (t,) in self.lake.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()}

    def open_lake(self, create: bool) -> None:
        """Check the lake's schema version, create or complete it, and load the copy."""
        for _ in range(MAX_ATTEMPTS):
            tables = self._lake_tables()
            try:
                if not tables:
                    if not create or self.read_only:
                        raise StoreError(f"{self.path}: no argusdb store there yet. Create it "
                                         f"with: argus init {_q(self.path)}")
                    self._create_lake(schema_tables())
                    continue
                if "store_meta" not in tables or "run" not in tables:
                    raise StoreError(f"{self.path}: a DuckLake that is not an argusdb store "
                                     f"(tables {sorted(tables)[:5]}). Use another "
                                     "metadata_schema= or database.")
                row = self.lake.execute("SELECT value FROM lake.store_meta "
                                        "WHERE key = 'schema_version'").fetchone()
                version = parse_version(self.path, row[0]) if row else 0
                if version > SCHEMA_VERSION:
                    raise StoreError(f"{self.path}: written by a newer argusdb (store schema "
                                     f"{version}; this release reads schema {SCHEMA_VERSION}). "
                                     "Upgrade argusdb to open it.")
                if version < FIRST_SHARED_VERSION:
                    raise StoreError(f"{self.path}: store schema {version} predates shared "
                                     f"stores (schema {FIRST_SHARED_VERSION}); copy an "
                                     "embedded store in with 'argus copy' instead.")
                if version < SCHEMA_VERSION and not self.read_only:
                    self._migrate_lake(tables)
                    continue
                # Read-only, a lake of an older schema loads what it has (columns added
                # since read NULL), as an embedded store answers from a migrated copy.
                self._lake_version = version
                missing = [t for t in schema_tables() if t not in tables]
                if missing and not self.read_only:
                    self._create_lake(missing)   # tables a newer module added, same version
                    continue
                self.load()
                return
            except StoreConflict:
                time.sleep(random.uniform(0.01, 0.1))
        raise StoreError(f"{self.path}: could not create the store's tables (conflicts)")

    def _typed_columns(self, table: str) -> list[tuple[str, str]]:
        """(column, type) of ``table`` in the working copy (the schema modules' DDL)."""
        return [(str(c), str(t)) for c, t in self.con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = 'memory' "
            "AND table_name = ? ORDER BY column_index", [table]).fetchall()]

    def _lake_columns(self, table: str) -> set[str]:
        return {c for (c,) in self.lake.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake' "
            "AND table_name = ?", [table]).fetchall()}

    def _migrate_lake(self, tables: set[str]) -> None:
        """Bring a lake of an older schema to this one in one commit: the tables and columns
        ``argusdb/schema/`` declares that it lacks (columns NULL for the rows held), then its
        ``schema_version`` (see :mod:`argusdb.store.versions`)."""
        self.lake.execute("BEGIN")
        try:
            for t in schema_tables():
                if t not in tables:
                    self._create_table(t)
                    continue
                have = self._lake_columns(t)
                for col, typ in self._typed_columns(t):
                    if col not in have:
                        self.lake.execute(f'ALTER TABLE lake.{t} ADD COLUMN "{col}" {typ}')
            self.lake.execute("UPDATE lake.store_meta SET value = ? WHERE key = "
                              "'schema_version'", [str(SCHEMA_VERSION)])
            self.lake.execute("CALL lake.set_commit_message('argus', 'migrate', "
                              "extra_info => ?)", [json.dumps({"schema": SCHEMA_VERSION})])
            self.lake.execute("COMMIT")
        except duckdb.Error as exc:
            with suppress(duckdb.Error):
                self.lake.execute("ROLLBACK")
            raise StoreConflict(f"{self.path}: migrating the schema conflicted ({exc})") from exc

    def _create_table(self, table: str) -> None:
        self.lake.execute(f"CREATE TABLE IF NOT EXISTS lake.{table} (" + ", ".join(
            f'"{c}" {t}' for c, t in self._typed_columns(table)) + ")")

    def _create_lake(self, tables: list[str]) -> None:
        """Create ``tables`` in the lake (column types as the working copy's) in one commit."""
        self.lake.execute("BEGIN")
        try:
            for t in tables:
                self._create_table(t)
            if "store_meta" in tables:
                self.lake.execute("INSERT INTO lake.store_meta VALUES ('schema_version', ?), "
                                  "('commits', '0')", [str(SCHEMA_VERSION)])
            self.lake.execute("COMMIT")
        except duckdb.Error as exc:
            with suppress(duckdb.Error):
                self.lake.execute("ROLLBACK")
            raise StoreConflict(f"{self.path}: creating tables conflicted ({exc})") from exc

    def _columns(self, table: str) -> list[str]:
        if table not in self._cols:
            self._cols[table] = [c for (c,) in self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'memory' "
                "AND table_name = ? ORDER BY column_index", [table]).fetchall()]
        return self._cols[table]

    def _current(self) -> int:
        row = self.lake.execute("SELECT id FROM lake.current_snapshot()").fetchone()
        return int(row[0]) if row else 0

    def load(self, tables: list[str] | None = None) -> None:
        """(Re)load the working copy from the lake's newest snapshot (one consistent read).

        With ``tables``, only the base copies of those (after this process's own commit)."""
        self.lake.execute("BEGIN")
        try:
            snap = self._current()
            for t in tables or schema_tables():
                want = self._columns(t)
                if self._lake_version < SCHEMA_VERSION:   # read-only, older lake
                    have = self._lake_columns(t)
                    want = [c for c in want if c in have]
                    if not want:
                        continue   # a table the older lake does not have: empty here
                cols = ", ".join(f'"{c}"' for c in want)
                data = self.lake.execute(
                    f"SELECT rowid AS _rid, {cols} FROM lake.{t}").to_arrow_table()
                self.con.register("_argus_lake", data)
                try:
                    if not self.read_only:
                        self.con.execute(f"CREATE OR REPLACE TABLE argus_base._base_{t} AS "
                                         f"SELECT * FROM _argus_lake")
                    if tables is None:
                        self.con.execute(f"DELETE FROM main.{t}")
                        self.con.execute(f"INSERT INTO main.{t} ({cols}) SELECT {cols} "
                                         f"FROM _argus_lake")
                finally:
                    self.con.unregister("_argus_lake")
        finally:
            self.lake.execute("COMMIT")
        self.lake_snapshot = snap
        if tables is None:
            self.reset_run_seq()
            self.generation += 1

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write: on the working copy, then pushed to DuckLake as one transaction.

        Raises:
            StoreConflict: another writer committed first (the copy is reloaded; run the
                write again, as :meth:`retrying` does).
        """
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only (or as of a snapshot); "
                             "it cannot be written")
        with self._lock:
            if self._current() != self.lake_snapshot:
                self.load()
                if self._attempting:   # what the attempt read before this point is stale
                    raise StoreConflict(f"{self.path}: another writer committed first")
            with self._local_transaction(snapshot=False) as con:
                yield con
            runs, self._new_runs = self._new_runs, []
            self._push(runs)

    def _push(self, runs: list[str]) -> None:
        """Push the working copy's difference from its base to the lake, in one commit."""
        changed: list[str] = []
        self.lake.execute("BEGIN")
        try:
            if self._current() != self.lake_snapshot:
                # Committed after the copy was loaded: this write was computed on a stale copy.
                raise duckdb.TransactionException("Transaction conflict: the store moved")
            for t in schema_tables():
                cols = ", ".join(f'"{c}"' for c in self._columns(t))
                added = self.con.execute(
                    f"SELECT {cols} FROM main.{t} EXCEPT ALL "
                    f"SELECT {cols} FROM argus_base._base_{t}").to_arrow_table()
                same = " AND ".join(f'b."{c}" IS NOT DISTINCT FROM m."{c}"'
                                    for c in self._columns(t))
                gone = [r for (r,) in self.con.execute(
                    f"SELECT b._rid FROM argus_base._base_{t} b ANTI JOIN main.{t} m ON {same}"
                ).fetchall()]
                if gone:
                    self.lake.execute(f"DELETE FROM lake.{t} WHERE rowid IN "
                                      f"(SELECT unnest(?::BIGINT[]))", [gone])
                if added.num_rows:
                    self.lake.register("_argus_add", added)
                    try:
                        self.lake.execute(f"INSERT INTO lake.{t} ({cols}) SELECT {cols} "
                                          f"FROM _argus_add")
                    finally:
                        self.lake.unregister("_argus_add")
                if gone or added.num_rows:
                    changed.append(t)
            if not changed:
                self.lake.execute("ROLLBACK")
                return
            # Every write bumps this one row, so two overlapping writes always conflict.
            self.lake.execute("UPDATE lake.store_meta SET value = (value::BIGINT + 1)::VARCHAR "
                              "WHERE key = 'commits'")
            self.lake.execute("CALL lake.set_commit_message('argus', ?, extra_info => ?)",
                              ["ingest" if runs else "write", json.dumps({"runs": runs})])
            self.lake.execute("COMMIT")
        except duckdb.Error as exc:
            with suppress(duckdb.Error):
                self.lake.execute("ROLLBACK")
            self.load()
            if isinstance(exc, duckdb.TransactionException) or "onflict" in str(exc):
                raise StoreConflict(f"{self.path}: another writer committed first; "
                                    "run the write again") from exc
            raise StoreError(f"{self.path}: the shared store refused the write "
                             f"({str(exc).splitlines()[0]})") from exc
        now = self._current()
        if now == self.lake_snapshot + 1:
            self.load(["store_meta", *changed])    # only this commit since our load
            self.lake_snapshot = now
        else:
            self.load()

    def retrying(self, attempt: Callable[[], Any]) -> Any:
        """Run ``attempt()`` until it commits without a conflict (jittered back-off)."""
        for i in range(MAX_ATTEMPTS):
            if self._current() != self.lake_snapshot:
                self.load()
            self._attempting = True
            try:
                return attempt()
            except StoreConflict:
                time.sleep(random.uniform(0, min(0.05 * (i + 1), 1.0)))
            finally:
                self._attempting = False
        raise StoreError(f"{self.path}: {MAX_ATTEMPTS} attempts conflicted with other writers; "
                         "run the command again")

    def snapshots(self) -> list[dict[str, Any]]:
        """DuckLake's snapshots, oldest first, with the runs each commit added."""
        out = []
        for sid, at, message, extra in self.lake.execute(
                "SELECT snapshot_id, snapshot_time, commit_message, commit_extra_info "
                "FROM lake.snapshots() ORDER BY snapshot_id").fetchall():
            runs = json.loads(extra).get("runs", []) if extra else []
            out.append({"snapshot_id": sid, "committed_at": at,
                        "kind": message or "schema", "run_ids": runs})
        return out

