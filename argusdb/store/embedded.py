"""The store: one embedded DuckDB file.

Each run lands in one transaction: its rows become visible whole or not at all, also when the
process is killed half-way (DuckDB only makes a transaction durable at COMMIT). Views of
``argusdb/queries/`` are (re)created when a store is opened so code and store never disagree.

Example:
    >>> with Store.open_file("argus.duckdb", read_only=True) as st:
    ...     st.rows("SELECT count(*) AS n FROM run")
    [{'n': 14}]
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from argusdb.errors import QueryFailed, StoreError
from argusdb.schema import catalog
from argusdb.schema.sqltext import inline, literal, literal_list
from argusdb.store import integrity, pending
from argusdb.store import versions as store_versions
from argusdb.store.connect import (
    CONFIG,
    connect_waiting,
    lock_timeout_s,
    not_a_store,
    session,
)
from argusdb.store.guard import (
    MAX_BYTES,
    MAX_ROWS,
    READS,
    WATCHDOG,
    Guarded,
    KeptPlans,
    Rows,
    first_line,
    join_unwinding,
    one_select,
    results,
)
from argusdb.store.rows import RowWriter
from argusdb.store.versions import SCHEMA_VERSION

if TYPE_CHECKING:  # loaded where Arrow is read or written: a question printed as rows needs none
    import pyarrow as pa


def _catalog_mark() -> str:
    """The end of ``store_meta``'s comment in a store whose catalog this release wrote."""
    return f" [catalog {catalog.fingerprint()}]"


class Store(RowWriter):
    """An argusdb store (DuckDB file)."""

    #: Whether writers keep the checker's metadata summaries in the store (a shared store
    #: keeps them in each connection's memory).
    keeps_summaries = True

    def __init__(self, path: str, con: duckdb.DuckDBPyConnection,
                 read_only: bool = False) -> None:
        self.path = path
        self.con = con
        self.read_only = read_only
        self._lock = threading.Lock()
        self._locked = False
        #: Whether its statements' time limits count CPU as well as wall seconds
        #: (:data:`argusdb.store.guard.WALL_BACKSTOP`): the built-in answers' do.
        self.count_cpu = False
        #: Bumped by every write path of this object; readers cache metadata against it.
        #: (DuckDB locks the file: no other process writes while this one has it open.)
        self.generation = 0
        #: Whether this read-only store is of an older schema or catalog (see :meth:`open_file`).
        self.needs_upgrade = False
        #: The checker's metadata of this connection (argusdb.api.metadata), made on use.
        self.checker_metadata: Any = None
        self._watchdog = WATCHDOG
        #: Plans of questions asked again in this generation (see :class:`KeptPlans`).
        self._kept = KeptPlans()
        #: DuckDB's memory limit and threads once locked down (see :meth:`lock_down`).
        self.memory_limit = "4GB"
        self.threads = 2
        #: DuckDB threads for an append of Arrow rows (:meth:`_append_threads`); an ingest
        #: whose rows were all parsed ahead raises it (``argusdb.ingest.Prepared``).
        self.append_threads = 1
        #: Where a locked-down instance spills what passes the memory limit (None: nowhere, a
        #: question's connection; an ingest's spills beside the store, see argusdb.api).
        self.spill_directory: str | None = None
        #: Runs added by the open transaction (see :meth:`transaction`).
        self._new_runs: list[str] = []
        #: Whether the open transaction appended Arrow rows (:meth:`append_batch`).
        self._appended = False
        #: Columns and defaults of the tables batches were appended to (:meth:`_column_defaults`).
        self._table_columns: dict[str, list[tuple[str, str | None]]] = {}
        #: Tables with a key (see :meth:`_or_ignore`), read on first use.
        self._keyed: set[str] | None = None

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open_file(cls, path: str | Path, create: bool = False, read_only: bool = False,
                  lock_timeout: float | None = None, upgraded: bool = False) -> Store:
        """Open an embedded store file; with ``create`` make it (and its tables) when missing.
        Use :func:`argusdb.store.open_store`, which also opens shared stores and snapshots and
        upgrades an older store opened read-only.

        Another process's lock is waited for, up to ``lock_timeout`` seconds (default
        :func:`lock_timeout_s`). A read-only store of an older schema, or whose views and
        macros another release wrote, opens with :attr:`needs_upgrade` set (``upgraded``: the
        caller upgraded it already).

        Raises:
            StoreError: the file is missing (without ``create``), locked past the wait, not a
                store, of a newer schema, or its write-ahead log lost a committed run.
        """
        p = Path(path)
        if not create and not p.exists():
            raise StoreError(f"{path}: no such store. Create it with 'argus init {path}'.")
        if p.exists() and p.is_dir():
            raise StoreError(f"{path}: is a directory. Name a store file, e.g. {p}/argus.duckdb.")
        if p.exists() and (what := not_a_store(p)):
            raise StoreError(f"{path}: {what}. Name an argusdb store, or create one with "
                             f"'argus init NEW.duckdb'.")
        wal: list[str | None] = [None]

        def note_wal() -> None:  # the log as it is just before DuckDB replays it
            wal[0] = pending.wal_state(p) if pending.pending_path(p).exists() else None

        try:
            con = connect_waiting(p, read_only, lock_timeout_s() if lock_timeout is None
                                  else lock_timeout, before=note_wal)
        except StoreError as exc:
            raise pending.with_pending_runs(p, exc) from exc.__cause__
        st = cls(str(p), con, read_only)
        try:
            st._check_pending(wal[0])
            version = st.schema_version()
            if version > SCHEMA_VERSION:
                raise StoreError(f"{path}: written by a newer argusdb (store schema {version}; "
                                 f"this release reads schema {SCHEMA_VERSION} and older). "
                                 "Upgrade argusdb to open it.")
            if version == 0 and (read_only or not create):
                raise StoreError(f"{path}: not an argusdb store (no 'run' table). "
                                 f"Create one with 'argus init'.")
            rebuild = version == SCHEMA_VERSION and st._check_structure()
            if read_only and (version < SCHEMA_VERSION or rebuild or (
                    not upgraded and not st.catalog_current())):
                st.needs_upgrade = True
            if not read_only:
                st.ensure_schema(version, rebuild=rebuild)
        except BaseException:
            st.close()
            raise
        return st

    def snapshot_identity(self) -> str | None:
        """What this store's data are a function of, when it is pinned to a snapshot that
        never changes (a shared store's); None here (an embedded file is keyed by the file's
        own identity, :func:`argusdb.api.kept.store_identity`)."""
        return None

    def reader(self) -> Store:
        """A read-only view of this store over the same connection, for questions on a
        read-write store: the checker treats it as read-only (its metadata summaries go to
        TEMP tables, never into the file), and it follows this store's write generation."""
        view = _ReaderView(self.path, self.con, read_only=True)
        view.writer = self
        return view

    @classmethod
    def in_memory(cls, label: str) -> Store:
        """An empty store in memory (snapshots, copies), named ``label`` in messages."""
        st = cls(label, session(duckdb.connect(":memory:", config=dict(CONFIG))))
        st.ensure_schema(0)
        return st

    def load_arrow(self, table: str, data: pa.Table) -> None:
        """Append ``data`` (columns named as the table's) to ``table``, by column name."""
        self.con.register("_argus_load", data)
        try:
            self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _argus_load")
        finally:
            self.con.unregister("_argus_load")
        self.generation += 1

    def reset_run_seq(self) -> None:
        """Restart the run sequence after the highest run_seq held (after a bulk load)."""
        row = self.con.execute("SELECT coalesce(max(run_seq), 0) + 1 FROM run").fetchone()
        start = int(row[0]) if row else 1
        self.con.execute(f"CREATE OR REPLACE SEQUENCE run_seq_gen START {start}")

    def schema_version(self) -> int:
        """The store's schema version: 0 for an empty database (a new store).

        Raises:
            StoreError: the database holds tables but is not an argusdb store.
        """
        if self.has_table("store_meta"):
            row = self.con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'"
                                   ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: its store_meta table names no schema_version; "
                                 "it was not written by argusdb. Use a new store file.")
            return store_versions.parse_version(self.path, row[0])
        if self.has_table("run"):
            if self.has_table("store_snapshot"):   # schema 2 brought both: one was dropped
                raise StoreError(f"{self.path}: damaged: it has the store_snapshot table of "
                                 "store schema 2 and later but no store_meta table, which names "
                                 "its schema version. Restore the store from a copy, or create "
                                 "a new store ('argus init NEW.duckdb') and ingest the "
                                 "artefacts again.")
            return 1
        row = self.con.execute("SELECT count(*) FROM duckdb_tables() WHERE NOT temporary"
                               ).fetchone()
        if row and row[0]:
            raise StoreError(f"{self.path}: a DuckDB database that is not an argusdb store (it "
                             "has tables, none of them 'run'). argusdb leaves it untouched; "
                             "name a new store file.")
        return 0

    def _check_pending(self, wal: str | None) -> None:
        """Refuse a store whose WAL lost runs that were committed (see :meth:`transaction`).

        ``wal`` is the log's state before this opening replayed it. Runs the marker names as
        committing count as committed unless that state is still the one recorded before
        their COMMIT (then the COMMIT never reached the log: the writer stopped before it)."""
        marker = pending.pending_path(Path(self.path))
        if not marker.exists():
            return
        record = pending.read_marker(marker)
        held = self.has_table("run")
        missing = [r for r in record["committed"] if not (held and self.run_exists(r))]
        unsure = [r for r in record["committing"] if not (held and self.run_exists(r))]
        if unsure and record["wal"] is not None and wal == record["wal"]:
            unsure = []   # the log is as it was before that COMMIT: it did not happen
        if missing or unsure:
            lost = missing + unsure
            raise StoreError(
                f"{self.path}: run(s) {', '.join(lost)} are missing: they were committed, or "
                f"being committed, and the write-ahead log ({Path(self.path).name}.wal) that "
                "held them did not replay (it is damaged, truncated or was removed, or the "
                "writer stopped inside that COMMIT). The store file holds every run "
                f"checkpointed before them. To accept that loss, delete {marker.name} beside "
                "the store and ingest those artefacts again.")
        if not self.read_only:
            self.con.execute("CHECKPOINT")
            marker.unlink(missing_ok=True)

    def close(self) -> None:
        join_unwinding()  # interrupted queries still unwinding on this store's cursors
        self._kept.close()
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has_table(self, name: str) -> bool:
        # A literal, not a bound parameter: DuckDB's client imports pandas at the first bound
        # parameter (~0.4 s CPU, ~80 MiB), and a read-only question needs none.
        lit = literal(name)
        row = self.con.execute(f"SELECT count(*) FROM duckdb_tables() WHERE table_name = {lit}"
                               ).fetchone()
        return bool(row and row[0])

    def add_missing_columns(self) -> list[str]:
        """Add to the store's tables the columns ``argusdb/schema/`` declares and they lack (a store
        written before the column existed), each with its DDL type and default; returns
        ``table.column`` of each column added. Call it inside the migrating transaction."""
        ref = duckdb.connect(":memory:")
        try:
            for mod in catalog.schema_modules():
                ref.execute(mod.text)
            want = ref.execute(
                "SELECT c.table_name, c.column_name, c.data_type, c.column_default "
                "FROM duckdb_columns() AS c JOIN duckdb_tables() AS t USING (database_name, "
                "schema_name, table_name) WHERE c.schema_name = 'main' AND NOT t.internal "
                "ORDER BY c.table_name, c.column_index").fetchall()
        finally:
            ref.close()
        have = set(self.con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = "
            "current_database() AND schema_name = current_schema()").fetchall())
        added: list[str] = []
        for table, col, typ, default in want:
            if (table, col) not in have:
                tail = f" DEFAULT {default}" if default is not None else ""
                self.con.execute(f'ALTER TABLE {table} ADD COLUMN "{col}" {typ}{tail}')
                added.append(f"{table}.{col}")
        return added

    def catalog_current(self) -> bool:
        """Whether the store's views, macros and docs are the ones this release writes.

        :meth:`ensure_schema` ends the comment of the ``store_meta`` table with this release's
        :func:`argusdb.schema.catalog.fingerprint` (``[catalog <sha256>]``). Every release copies
        its
        docs into the store each time it re-creates its views, ``store_meta``'s included, so
        another release re-creating its own views also wipes the mark.
        """
        row = self.con.execute(
            "SELECT comment FROM duckdb_tables() WHERE table_name = 'store_meta' AND NOT "
            "temporary AND database_name = current_database()").fetchone()
        return bool(row and row[0] and str(row[0]).endswith(_catalog_mark()))

    def _check_structure(self) -> bool:
        """:func:`argusdb.store.integrity.check_structure` of this store."""
        return integrity.check_structure(self.con, self.path)

    def ensure_schema(self, version: int = SCHEMA_VERSION, rebuild: bool = False) -> None:
        """Create missing tables, (re)create views and macros, and copy the docs in; a store of
        an older schema ``version`` is migrated in the same transaction. A store of this
        schema whose catalog is this release's already (:meth:`catalog_current`) is left as
        it is (unless ``rebuild``: a view, macro or the run sequence was dropped):
        re-creating every view, macro and comment costs ~0.4 s CPU per command."""
        if version == SCHEMA_VERSION and not rebuild and self.catalog_current():
            return
        try:
            self.con.execute("BEGIN")
            for mod in catalog.schema_modules():
                self.con.execute(mod.text)
            # a dropped sequence restarts after the highest run held (never a number again)
            row = self.con.execute("SELECT coalesce(max(run_seq), 0) + 1 FROM run").fetchone()
            self.con.execute(f"CREATE SEQUENCE IF NOT EXISTS run_seq_gen START "
                             f"{int(row[0]) if row else 1}")
            store_versions.migrate(self, version)
            for mod in catalog.query_modules():
                self.con.execute(mod.text)
            for stmt in catalog.comment_statements():
                self.con.execute(stmt)
            doc = literal(catalog.all_objects()["store_meta"].description + _catalog_mark())
            self.con.execute(f"COMMENT ON TABLE store_meta IS {doc}")
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            self.con.execute("ROLLBACK")
            raise StoreError(f"{self.path}: cannot create the argusdb schema ({first_line(exc)}"
                             "). The store may be damaged: restore it from a copy, or create a "
                             "new store ('argus init NEW.duckdb') and ingest the artefacts "
                             "again.") from exc
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # -- reading ---------------------------------------------------------------------------
    def sql(self, query: str, params: Sequence[Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run trusted SQL (library code only; user queries go through the checker)."""
        if query.lstrip().split(None, 1)[0].upper() not in READS:
            self.generation += 1
        return self._execute(query, params)

    def _execute(self, query: str, params: Sequence[Any] | None) -> duckdb.DuckDBPyConnection:
        """``execute``, plain parameters as literals (binding one imports pandas, ~0.4 s)."""
        text = inline(query, params) if params else query
        return self.con.execute(text) if text is not None else self.con.execute(query, params)

    def arrow(self, query: str, params: Sequence[Any] | None = None) -> pa.Table:
        return self._execute(query, params).to_arrow_table()

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self._execute(query, params)
        names = [d[0] for d in cur.description or []]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    # -- user queries (sandboxed) -----------------------------------------------------------
    def lock_down(self, memory_limit: str | None = None, threads: int | None = None) -> None:
        """Lock this database instance for user queries (idempotent; cannot be undone).

        External access (files, URLs, extensions) is disabled, spilling to disk is off (but to
        :attr:`spill_directory` where an ingest set one), memory and threads are bounded, and
        the configuration is locked so no later ``SET`` can undo it. Ingest keeps working: it
        hands Arrow batches over in memory.
        """
        if self._locked:
            return
        row = self.con.execute("SELECT current_setting('lock_configuration')").fetchone()
        if row and row[0]:  # another Store object over this connection locked it already
            self._locked = True
            return
        spill = literal(self.spill_directory or "")
        for stmt in (f"SET temp_directory = {spill}",  # before external access goes
                     "SET autoinstall_known_extensions = false",
                     "SET autoload_known_extensions = false",
                     "SET allow_community_extensions = false",
                     "SET enable_external_access = false",
                     f"SET memory_limit = {literal(memory_limit or self.memory_limit)}",
                     f"SET threads = {int(threads or self.threads)}",
                     "SET lock_configuration = true"):
            self.con.execute(stmt)
        self._locked = True

    def run_select(self, sql: str, timeout_s: float) -> pa.Table:
        """Run one user SELECT (see :meth:`stream_select`); the whole answer, within the caps.

        Raises:
            QueryFailed: DuckDB rejected or interrupted the query, or its answer is larger
                than ``MAX_ROWS`` rows or ``MAX_BYTES`` bytes.
        """
        table, cut = self.stream_select(sql, timeout_s)
        if cut:
            raise QueryFailed(cut, "aggregate, filter or add a LIMIT to the query")
        return table

    def stream_select(self, sql: str, timeout_s: float, max_rows: int = MAX_ROWS,
                      max_bytes: int = MAX_BYTES, limit_s: float | None = None
                      ) -> tuple[pa.Table, str | None]:
        """Run one user SELECT on a locked-down cursor in a read-only transaction.

        DuckDB's own parser must agree that ``sql`` is exactly one SELECT statement (a second
        opinion after the checker's). The transaction is READ ONLY, so nothing the query calls
        can write (not even a sequence, which a rollback would not undo), and it is rolled
        back. The answer is read from DuckDB's Arrow stream batch by batch and stops at
        ``max_rows`` rows or ``max_bytes`` bytes; the watchdog interrupts it at ``timeout_s``
        (what is left of the caller's time limit ``limit_s``, which the error names).

        Returns:
            The answer (at most ``max_rows`` rows), and None or why it was cut short.

        Raises:
            QueryFailed: DuckDB rejected or interrupted the query.
        """
        return self.stream_selects([sql], timeout_s, max_rows, max_bytes, limit_s)[0]

    def stream_selects(self, sqls: Sequence[str], timeout_s: float, max_rows: int = MAX_ROWS,
                       max_bytes: int = MAX_BYTES, limit_s: float | None = None,
                       as_rows: bool = False) -> list[tuple[Any, str | None]]:
        """:meth:`stream_select` of several SELECTs at once, each on a cursor of its own in a
        worker thread of its own: DuckDB releases the GIL while a statement runs, so
        independent statements run side by side (on an idle machine, on separate cores).
        Each is checked by DuckDB's parser before any runs, and each has the caps and the
        time limit it would have alone (``timeout_s`` counts from this call for all of them).
        One statement whose kept plan ran quickly over the same data runs on the caller's
        thread (:meth:`KeptPlans.quick`).

        Returns:
            Each answer (a ``pyarrow.Table``; with ``as_rows`` :class:`Rows`, whose bytes are
            counted as their text's length and 8 per other value) and why it was cut short
            (or None), in the order of ``sqls``.

        Raises:
            QueryFailed: DuckDB rejected or interrupted one of them (the first in ``sqls``
                order; the others are interrupted, and waited for as :meth:`_guarded` waits).
        """
        self.lock_down()
        for sql in sqls:
            one_select(self.con, sql)

        def fetch(cur: duckdb.DuckDBPyConnection) -> tuple[pa.Table, str | None]:
            import pyarrow as pa

            reader = cur.to_arrow_reader(batch_size=min(max(max_rows, 1) + 1, 65536))
            batches: list[pa.RecordBatch] = []
            rows = size = 0
            cut: str | None = None
            for batch in reader:
                if rows + batch.num_rows > max_rows:
                    batches.append(batch.slice(0, max_rows - rows))
                    cut = f"the answer has more than {max_rows:,} rows"
                    break
                size += batch.nbytes
                if size > max_bytes:
                    cut = f"the answer is larger than {max_bytes / 2**20:g} MiB"
                    break
                batches.append(batch)
                rows += batch.num_rows
            return pa.Table.from_batches(batches, schema=reader.schema), cut

        def fetch_rows(cur: duckdb.DuckDBPyConnection) -> tuple[Rows, str | None]:
            names = [d[0] for d in cur.description or []]
            rows: list[tuple[Any, ...]] = []
            size = 0
            cut: str | None = None
            while batch := cur.fetchmany(2048):
                if len(rows) + len(batch) > max_rows:
                    rows += batch[:max_rows - len(rows)]
                    cut = f"the answer has more than {max_rows:,} rows"
                    break
                size += sum(len(v) if isinstance(v, str | bytes) else 8 for r in batch for v in r)
                if size > max_bytes:
                    cut = f"the answer is larger than {max_bytes / 2**20:g} MiB"
                    break
                rows += batch
            return Rows(names, rows), cut

        if as_rows:
            fetch = fetch_rows
        if len(sqls) == 1 and self._kept.quick(self.generation, sqls[0], timeout_s):
            # A question alone, from a kept plan that ran quickly over the same data: on the
            # caller's thread, without a worker's start and hand-off (~0.4-1 ms CPU; under
            # load each hand-off waits for the scheduler). The watchdog still interrupts it.
            return [Guarded(self, None, sqls[0], timeout_s, fetch, limit_s, own=True,
                             kept=self._kept).run()]
        running = [self._start(sql, timeout_s, fetch, limit_s, self._kept) for sql in sqls]
        return results(running)

    @contextmanager
    def time_limit(self, timeout_s: float) -> Iterator[None]:
        """Interrupt this store's library SQL (reports, diffs) after ``timeout_s``."""
        with self._watchdog.limit(self.con, timeout_s, cpu=self.count_cpu):
            yield

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor (its own session: TEMP tables live as long as it does)."""
        return self.con.cursor()

    def guarded_rows(self, sql: str, timeout_s: float = 10.0,
                     cursor: duckdb.DuckDBPyConnection | None = None) -> list[dict[str, Any]]:
        """Library read SQL (checker metadata queries) under the same time limit."""

        def fetch(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
            names = [d[0] for d in cur.description or []]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchmany(MAX_ROWS)]

        return self._guarded(sql, timeout_s, fetch, cursor)

    def _guarded(self, sql: str, timeout_s: float, fetch: Any,
                 cursor: duckdb.DuckDBPyConnection | None = None,
                 limit_s: float | None = None) -> Any:
        """Run ``sql`` in a READ ONLY transaction that is rolled back, under the time limit.

        On a cursor of its own the query runs in a worker thread and the caller waits at most
        ``timeout_s`` plus the watchdog's grace and :data:`ABANDON_S`: a DuckDB operator that
        checks for interrupts only between phases (a distinct aggregate's finalize over
        hundreds of millions of keys) may need a second to unwind after its interrupt. Past
        that the caller gets the time-limit error at once; the interrupted cursor unwinds,
        rolls back and closes in the background, holding only its own session.
        """
        if cursor is None:
            return self._start(sql, timeout_s, fetch, limit_s).result()
        return Guarded(self, cursor, sql, timeout_s, fetch, limit_s, own=False).run()

    def _start(self, sql: str, timeout_s: float, fetch: Any,
               limit_s: float | None = None, kept: KeptPlans | None = None) -> Guarded:
        """:meth:`_guarded` on a new cursor (or one of ``kept``), started in its worker
        thread; ``.result()`` waits for it."""
        guarded = Guarded(self, None, sql, timeout_s, fetch, limit_s, own=True, kept=kept)
        guarded.start()
        return guarded

    def run_exists(self, run_id: str) -> bool:
        return bool(self.runs_present([run_id]))

    def runs_present(self, run_ids: Sequence[str]) -> set[str]:
        """Those of ``run_ids`` the store holds (one query for a command's runs)."""
        return {str(r) for (r,) in self.con.execute(  # literals: a bound list loads pandas
            f"SELECT run_id FROM run WHERE run_id IN ({literal_list(run_ids)})").fetchall()}

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; rolled back on any exception (including KeyboardInterrupt).

        A transaction that adds runs also records a snapshot (``store_snapshot``), and once it
        has committed the WAL is checkpointed into the store file, so losing the WAL cannot lose
        the run. From just before the COMMIT until that checkpoint a marker names the runs
        (:meth:`_mark_pending`), and :meth:`open` refuses a store whose WAL did not give them
        back, unless the WAL is provably as it was before the COMMIT (no commit happened).
        """
        with self._lock:
            with self._local_transaction(snapshot=True) as con:
                yield con
            self._after_commit()

    @contextmanager
    def _local_transaction(self, snapshot: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """``BEGIN`` … ``COMMIT`` on this process's connection, collecting the runs it adds in
        ``_new_runs``; rolled back on any exception (KeyboardInterrupt included). With
        ``snapshot``, the commit also records a ``store_snapshot`` row for those runs (a shared
        store has DuckLake's snapshots instead). The caller holds ``_lock``."""
        self.con.execute("BEGIN")
        self._new_runs = []
        self._appended = False
        earlier: dict[str, Any] | None = None
        try:
            yield self.con
            if snapshot:
                self._before_commit()
                earlier = self._mark_pending()
        except BaseException:
            self.con.execute("ROLLBACK")
            self._new_runs = []
            raise
        # The commit writes the appended rows' last row groups: on the threads they were
        # appended on (see _append_threads).
        try:
            with self._append_threads() if self._appended else nullcontext():
                self.con.execute("COMMIT")
        except duckdb.Error:   # not committed: the marker goes back to what it was
            if earlier is not None:
                self._restore_marker(earlier)
            self._new_runs = []
            raise
        self.generation += 1

    def _before_commit(self) -> None:
        if self._new_runs:
            self.con.execute(
                "INSERT INTO store_snapshot SELECT coalesce((SELECT max(snapshot_id) FROM "
                "store_snapshot), 0) + 1, now()::TIMESTAMP, (SELECT max(run_seq) FROM run), "
                "'ingest', ?", [self._new_runs])

    def _mark_pending(self) -> dict[str, Any] | None:
        """Before the COMMIT of a transaction that adds runs: name them in the pending marker,
        with the state of the write-ahead log, so that no moment exists at which they can be
        committed and then lost with the log without the store refusing to open.

        An empty log first gets one small committed write (``store_meta`` 'committing', on a
        cursor of its own), so the state recorded is never "no log": a log removed after the
        COMMIT then differs from it too. Runs of earlier commits whose checkpoint has not
        happened yet (another cursor held a transaction open) stay in the marker as
        committed."""
        if not self._new_runs or not Path(self.path).is_file():
            return None
        p = Path(self.path)
        marker = pending.pending_path(p)
        earlier = pending.read_marker(marker) if marker.exists() else {}
        wal = pending.wal_state(p)
        if wal == "absent" or wal.startswith("0:"):
            cur = self.con.cursor()
            try:
                cur.execute("INSERT OR REPLACE INTO store_meta VALUES ('committing', ?)",
                            [" ".join(self._new_runs)])
            finally:
                cur.close()
            wal = pending.wal_state(p)
        committed = [*earlier.get("committed", []), *earlier.get("committing", [])]
        pending.write_marker(marker, {"committed": committed, "committing": list(self._new_runs),
                               "wal": wal})
        return earlier

    def _restore_marker(self, earlier: dict[str, Any]) -> None:
        """Put the pending marker back as it was before a COMMIT that failed."""
        marker = pending.pending_path(Path(self.path))
        runs = [*earlier.get("committed", []), *earlier.get("committing", [])]
        if runs:
            pending.write_marker(marker, {"committed": runs, "committing": [], "wal": None})
        else:
            marker.unlink(missing_ok=True)

    def _after_commit(self) -> None:
        """After the COMMIT: checkpoint the log into the store file and drop the marker (or,
        when another cursor's open transaction blocks the checkpoint, keep the runs in the
        marker as committed; a later commit or opening checkpoints them)."""
        runs, self._new_runs = self._new_runs, []
        if not runs or not Path(self.path).is_file():
            return
        marker = pending.pending_path(Path(self.path))
        try:
            self.con.execute("CHECKPOINT")
        except duckdb.Error:   # another cursor's open transaction: the next one does
            record = pending.read_marker(marker) if marker.exists() else {}
            pending.write_marker(marker, {"committed": sorted({*record.get("committed", []),
                                                        *record.get("committing", []), *runs}),
                                   "committing": [], "wal": None})
            return
        marker.unlink(missing_ok=True)

    def retrying(self, attempt: Any) -> Any:
        """Run ``attempt()`` (one whole write); a shared store reruns it on a commit conflict."""
        return attempt()

    def snapshots(self) -> list[dict[str, Any]]:
        """The store's snapshots, oldest first (``argus runs --snapshots``)."""
        return self.rows("SELECT snapshot_id, committed_at, run_seq_max, kind, run_ids "
                         "FROM store_snapshot ORDER BY snapshot_id")

    def next_run_seq(self) -> int:
        return self.next_run_seqs(1)[0]

    def next_run_seqs(self, n: int) -> list[int]:
        """The next ``n`` run sequence numbers, rising (one statement for a command's runs)."""
        if n <= 0:
            return []
        return sorted(int(v) for (v,) in self.con.execute(
            f"SELECT nextval('run_seq_gen') FROM range({int(n)})").fetchall())


class _ReaderView(Store):
    """See :meth:`Store.reader`: closing it leaves the connection to its writer."""

    writer: Store

    @property
    def generation(self) -> int:
        return self.writer.generation

    @generation.setter
    def generation(self, value: int) -> None:
        pass  # set by Store.__init__; the writer's count is the one that matters

    def close(self) -> None:
        self._kept.close()  # the connection stays its writer's
