"""The store: one embedded DuckDB file. The only module that imports duckdb.

Each run lands in one transaction: its rows become visible whole or not at all, also when the
process is killed half-way (DuckDB only makes a transaction durable at COMMIT). Views of
``argusdb/queries/`` are (re)created when a store is opened so code and store never disagree.

Example:
    >>> with Store.open("argus.duckdb", read_only=True) as st:
    ...     st.rows("SELECT count(*) AS n FROM run")
    [{'n': 14}]
"""

from __future__ import annotations

import atexit
import json
import math
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from argusdb.errors import QueryFailed, StoreError
from argusdb.schema import catalog

#: Version of ``argusdb/schema/`` this release writes. A store records its own in ``store_meta``;
#: a store without that table but with ``run`` is version 1 (the first release). See
#: :mod:`argusdb.store.versions` for the migrations.
SCHEMA_VERSION = 4
#: Seconds a writer (or reader) waits for another process's lock on an embedded store; the
#: environment variable ARGUS_LOCK_TIMEOUT overrides it.
LOCK_TIMEOUT_S = 120.0
#: Prefix of a shared store's URI (see :mod:`argusdb.store.shared`).
SHARED_PREFIX = "ducklake:"


def lock_timeout_s() -> float:
    """The lock wait limit: ARGUS_LOCK_TIMEOUT (seconds) when set, else LOCK_TIMEOUT_S."""
    raw = os.environ.get("ARGUS_LOCK_TIMEOUT")
    if raw is None:
        return LOCK_TIMEOUT_S
    try:
        return max(0.0, float(raw))
    except ValueError as exc:
        raise StoreError(f"ARGUS_LOCK_TIMEOUT={raw!r} is not a number of seconds. Set it to "
                         "e.g. 120, or unset it.") from exc


def _pending_path(path: Path) -> Path:
    """Marker of committed runs not yet checkpointed from the WAL into the store file."""
    return path.with_name(path.name + ".argus-pending")

#: Leading keywords of library SQL that only reads (does not bump the write generation).
_READS = frozenset({"SELECT", "WITH", "FROM", "VALUES", "DESCRIBE", "SHOW", "SUMMARIZE",
                    "EXPLAIN"})
#: Seconds a caller waits, past its time limit and the watchdog's grace, for an interrupted
#: query to unwind before it gets the time-limit error and the query finishes in the background.
ABANDON_S = 0.4
#: Caps of one user answer: rows, and bytes of its Arrow batches.
MAX_ROWS = 1_000_000
MAX_BYTES = 256 * 2**20


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class _Watchdog:
    """One daemon thread per process that interrupts cursors past their deadline.

    Shared by every store of the process (a thread per store leaked one per connection).
    It sleeps until the nearest deadline, so it costs nothing while no query runs; a new
    deadline wakes it only when it is nearer than the one it sleeps towards (the deadline of an
    earlier question that has finished since does: it then wakes once, finds nothing due and
    sleeps on), so questions asked one after another do not each hand the GIL to it. A query
    still running ``GRACE_S`` after its interrupt (a single operator, such as ``list_sort``
    of a huge list, checks for interrupts only between vectors) is handed to the process's
    overrun handler (:func:`set_overrun_handler`): the CLI and the MCP worker end the process
    there, so no question outlives its time limit by more than a second.
    """

    GRACE_S = 0.3

    def __init__(self) -> None:
        self._cond = threading.Condition()
        #: key -> (deadline, cursor, interrupted already)
        self._deadlines: dict[int, tuple[float, Any, bool]] = {}
        self._thread: threading.Thread | None = None
        self._next_key = 0
        #: When the thread wakes next unless notified (monotonic seconds; inf: not before).
        self._until = math.inf

    @contextmanager
    def limit(self, cur: Any, timeout_s: float) -> Iterator[None]:
        with self._cond:
            self._next_key += 1
            key = self._next_key
            due = time.monotonic() + timeout_s
            self._deadlines[key] = (due, cur, False)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="argus-query-watchdog")
                self._until = -math.inf  # until it sleeps, it will see every deadline
                self._thread.start()
            if due < self._until:
                self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._deadlines.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [(k, c, hit) for k, (d, c, hit) in self._deadlines.items() if d <= now]
                for k, c, hit in due:
                    if hit:
                        del self._deadlines[k]
                    else:  # interrupted now; overrun if still here GRACE_S later
                        self._deadlines[k] = (now + self.GRACE_S, c, True)
                if not due:
                    wait = min((d for d, _, _ in self._deadlines.values()), default=None)
                    self._until = math.inf if wait is None else max(wait, now + 0.005)
                    self._cond.wait(None if wait is None else self._until - now)
                    self._until = -math.inf  # awake: it looks at every deadline again
                    continue
            for _, cur, hit in due:
                if not hit:
                    with suppress(Exception):
                        cur.interrupt()
                elif _OVERRUN is not None:
                    _OVERRUN()


_WATCHDOG = _Watchdog()
#: Query threads whose caller stopped waiting (see ``Store._guarded``): joined before the
#: store closes and before the interpreter exits (a thread still inside DuckDB at exit aborts
#: the process).
_UNWINDING: set[threading.Thread] = set()
_UNWINDING_LOCK = threading.Lock()


def _join_unwinding() -> None:
    with _UNWINDING_LOCK:
        threads = list(_UNWINDING)
    for t in threads:
        t.join()


atexit.register(_join_unwinding)
_OVERRUN: Callable[[], None] | None = None


class _Deadline:
    """A watchdog entry with nothing to interrupt: only the overrun handler acts on it."""

    def interrupt(self) -> None:
        pass


def deadline(timeout_s: float) -> AbstractContextManager[None]:
    """A hard deadline for a whole call (opening, checking, running, printing): past
    ``timeout_s`` plus the watchdog's grace the overrun handler runs, if one is set."""
    return _WATCHDOG.limit(_Deadline(), timeout_s)


def set_overrun_handler(handler: Callable[[], None] | None) -> Callable[[], None] | None:
    """What to do when a query ignores its interrupt for ``_Watchdog.GRACE_S`` seconds.

    Processes that exist to answer one caller (the CLI, the MCP server's worker) end
    themselves there; a library caller keeps the default (None: wait for the operator).
    """
    global _OVERRUN
    previous, _OVERRUN = _OVERRUN, handler
    return previous


#: Connection settings of every store: never load or fetch an extension (a file that is
#: not a DuckDB database must not trigger a download of a scanner for its format).
_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
           "allow_community_extensions": False}


#: Compression methods a store never tries. DuckDB analyses FSST for every text column of
#: every row group it writes; on argusdb's tables dictionary, constant or RLE encoding won
#: every time (100 ncu source pages with the other demo artefacts, a Kineto trace of 20
#: replicas, an nsys export: no FSST segment, and the same store bytes without it), and the
#: analysis cost ~0.5 s CPU of the ~3.2 s DuckDB spent appending and committing 1.09 M
#: evidence rows (``bench/bench_ingest_many.py``, README "Scale").
NOT_TRIED_COMPRESSION = "FSST,DICT_FSST"


def _session(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` without DuckDB's own progress bar (it draws on stdout, a file or a pipe too,
    for any statement past 2 s, which broke the ``--json`` answer of a long ingest) and with
    :data:`NOT_TRIED_COMPRESSION` (settings connect() does not take).

    A second connection of this process to the same file shares the first one's database
    instance, whose configuration a locked-down store has locked: there the settings cannot
    change and stay as they are (a CLI command, where the bar would land in its answer,
    opens its store once)."""
    row = con.execute("SELECT current_setting('enable_progress_bar'), value FROM "
                      "duckdb_settings() WHERE name = 'disabled_compression_methods'").fetchone()
    for differs, stmt in ((row is None or row[0], "SET enable_progress_bar = false"),
                          (row is None or str(row[1]).upper() != NOT_TRIED_COMPRESSION,
                           f"SET disabled_compression_methods = '{NOT_TRIED_COMPRESSION}'")):
        if differs:
            with suppress(duckdb.InvalidInputException):
                con.execute(stmt)
    return con


def _one_select(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise QueryFailed unless DuckDB's parser reads ``sql`` as exactly one SELECT."""
    try:
        stmts = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryFailed(f"DuckDB cannot parse the query: {_first_line(exc)}",
                          "write one SELECT statement in DuckDB SQL") from exc
    if len(stmts) != 1 or stmts[0].type != duckdb.StatementType.SELECT:
        raise QueryFailed("DuckDB reads this as something other than one SELECT",
                          "ask one read-only SELECT question")


#: Most statements a store keeps planned (see :class:`_KeptPlans`).
KEPT_PLANS = 16
#: Name of the prepared statement on a kept cursor.
_KEPT_NAME = "_argus_kept"
#: A question alone whose kept plan ran within this many seconds (and a tenth of its time
#: limit) runs on the caller's thread (see :meth:`Store.stream_selects`).
QUICK_S = 0.25


class _KeptPlans:
    """Questions asked again on unchanged data run from a plan DuckDB made once.

    Binding and planning a question over the ``evidence`` view (three branches, two with a
    correlated subquery) costs about a third of a diff's rows question at 31 M rows (~4 ms
    CPU of ~12). A statement that ran to its end once in this store write generation is,
    when asked again, prepared (``PREPARE``) on the cursor it runs on, executed, and that
    cursor kept idle with its plan; later asks execute the plan. Sound for the reason the
    checker's kept reports are (``Connection._checked``): the plan depends on the text, the
    catalog and the data's statistics, which change only with the generation, and a new
    generation closes every kept cursor. A statement that failed or was interrupted keeps
    nothing; the first ask of a text runs it as before, so its errors read as before.
    It also remembers how long each statement took (:meth:`quick`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gen: int | None = None
        #: Texts that ran to their end in this generation (the most recent KEPT_PLANS), with
        #: the seconds their last run took.
        self._ran: dict[str, float] = {}
        #: Idle cursors holding the prepared statement of a text.
        self._idle: dict[str, duckdb.DuckDBPyConnection] = {}

    def _at(self, gen: int) -> None:
        """Forget what an older generation kept (the caller holds the lock)."""
        if self._gen != gen:
            for cur in self._idle.values():
                with suppress(duckdb.Error):
                    cur.close()
            self._gen, self._ran, self._idle = gen, {}, {}

    def take(self, gen: int, sql: str) -> tuple[duckdb.DuckDBPyConnection | None, bool]:
        """An idle cursor with ``sql`` prepared (taken out: no other thread uses it), and
        whether to prepare it now (it ran once already, and no cursor holds its plan)."""
        with self._lock:
            self._at(gen)
            cur = self._idle.pop(sql, None)
            return cur, cur is None and sql in self._ran

    def quick(self, gen: int, sql: str, timeout_s: float) -> bool:
        """Whether a cursor holds ``sql``'s plan and its last run took at most
        :data:`QUICK_S` and a tenth of ``timeout_s`` (the same plan over the same data)."""
        with self._lock:
            self._at(gen)
            # (a text may have left the most recent KEPT_PLANS while its cursor is idle)
            return sql in self._idle and self._ran.get(sql, math.inf) <= min(
                QUICK_S, timeout_s / 10)

    def ran(self, gen: int, sql: str, cur: duckdb.DuckDBPyConnection | None,
            seconds: float) -> bool:
        """Note that ``sql`` ran to its end in ``seconds``; keep ``cur`` (holding its plan)
        when given and room is left. Returns whether ``cur`` was kept (else the caller closes
        it)."""
        with self._lock:
            self._at(gen)
            self._ran.pop(sql, None)
            self._ran[sql] = seconds
            while len(self._ran) > KEPT_PLANS:
                self._ran.pop(next(iter(self._ran)))
            if cur is None or sql in self._idle or len(self._idle) >= KEPT_PLANS:
                return False
            self._idle[sql] = cur
            return True

    def close(self) -> None:
        with self._lock:
            self._at(-1)


class _Guarded:
    """One library or user statement under the time limit (see ``Store._guarded``): run on
    the caller's thread (:meth:`run`), or in a worker thread (:meth:`start`, then
    :meth:`result`), which the caller stops waiting for past the limit. With ``kept``, a
    question runs from a kept plan where it may (:class:`_KeptPlans`)."""

    def __init__(self, store: Store, cur: duckdb.DuckDBPyConnection | None, sql: str,
                 timeout_s: float, fetch: Any, limit_s: float | None, own: bool,
                 kept: _KeptPlans | None = None) -> None:
        self.store, self.sql, self.fetch, self.own = store, sql, fetch, own
        self.timeout_s, self.shown = timeout_s, limit_s or timeout_s
        self.kept, self.gen, self.prepare = kept, store.generation, False
        held = None
        if kept is not None:
            held, self.prepare = kept.take(self.gen, sql)
        #: Whether :attr:`cur` holds the statement's plan (kept, or prepared by :meth:`run`).
        self.planned = held is not None
        self.cur = held or cur or store.con.cursor()
        self.outcome: dict[str, Any] = {}
        self.thread: threading.Thread | None = None
        #: When the caller stops waiting (monotonic seconds).
        self.give_up = time.monotonic() + timeout_s + _Watchdog.GRACE_S + ABANDON_S

    def stopped(self, exc: BaseException | None = None) -> QueryFailed:
        err = QueryFailed(f"the query ran longer than {self.shown:g} s and was stopped",
                          "narrow it (filter by region, run or signal) or raise the time "
                          "limit (--timeout)")
        err.__cause__ = exc
        return err

    def run(self) -> Any:
        cur = self.cur
        done, began = False, time.monotonic()
        try:
            cur.execute("BEGIN TRANSACTION READ ONLY")
            with self.store._watchdog.limit(cur, self.timeout_s):
                try:
                    out = self.fetch(cur.execute(self._statement(cur)))
                except duckdb.InterruptException as exc:
                    raise self.stopped(exc) from exc
                except duckdb.Error as exc:
                    raise QueryFailed(f"DuckDB could not run the query: "
                                      f"{_first_line(exc)}", "fix the query; 'argus "
                                      "explain' shows what it reads") from exc
            done = True
            return out
        finally:
            with suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            kept = done and self.kept is not None and self.kept.ran(
                self.gen, self.sql, cur if self.planned else None, time.monotonic() - began)
            if self.own and not kept:
                cur.close()

    def _statement(self, cur: duckdb.DuckDBPyConnection) -> str:
        """What to execute: the kept plan, the plan prepared now, or the text itself."""
        if self.prepare:
            try:
                cur.execute(f"PREPARE {_KEPT_NAME} AS {self.sql}")
                self.planned = True
            except duckdb.InterruptException:
                raise
            except duckdb.Error:  # not preparable: run the text, keep nothing
                return self.sql
        return f"EXECUTE {_KEPT_NAME}" if self.planned else self.sql

    def _work(self) -> None:
        try:
            self.outcome["value"] = self.run()
        except BaseException as exc:  # handed to the caller's thread by result()
            self.outcome["error"] = exc
        finally:
            with _UNWINDING_LOCK:
                _UNWINDING.discard(threading.current_thread())

    def start(self) -> None:
        self.thread = threading.Thread(target=self._work, daemon=True, name="argus-query")
        self.thread.start()

    def interrupt(self) -> None:
        with suppress(Exception):
            self.cur.interrupt()

    def result(self) -> Any:
        thread = self.thread
        assert thread is not None, "start() first"
        try:
            thread.join(max(self.give_up - time.monotonic(), 0.0))
        except BaseException:  # KeyboardInterrupt while waiting: stop the query too
            self.interrupt()
            raise
        if thread.is_alive():  # interrupted and still unwinding: answer now, let it finish
            with _UNWINDING_LOCK:
                if thread.is_alive():
                    _UNWINDING.add(thread)
            self.interrupt()
            raise self.stopped()
        if "error" in self.outcome:
            raise self.outcome["error"]
        return self.outcome["value"]


def _results(running: list[_Guarded]) -> list[Any]:
    """The results of started statements, in order; on the first failure the ones after it
    are interrupted and waited for (as each waits alone), then the failure is raised."""
    out: list[Any] = []
    for i, guarded in enumerate(running):
        try:
            out.append(guarded.result())
        except BaseException:
            for rest in running[i + 1:]:
                rest.interrupt()
            for rest in running[i + 1:]:
                with suppress(Exception):
                    rest.result()
            raise
    return out


#: DuckDB writes its magic bytes at offset 8 of every database file.
_MAGIC = (8, b"DUCK")


def _not_a_store(p: Path) -> str | None:
    """What the file at ``p`` is, when it is not a DuckDB database (None when it is one)."""
    try:
        with p.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not head:
        return None  # an empty file: DuckDB makes it a new database
    if head[_MAGIC[0]:_MAGIC[0] + len(_MAGIC[1])] == _MAGIC[1]:
        return None
    if head.startswith(b"SQLite format 3"):
        return "is a SQLite database, not an argusdb store"
    return "is not an argusdb store (not a DuckDB database file)"


def _open_error(path: str, exc: Exception) -> StoreError:
    text = _first_line(exc)
    if "WAL" in str(exc) or "write-ahead" in str(exc).lower() or "replay" in str(exc).lower():
        return StoreError(f"{path}: its write-ahead log {path}.wal is damaged ({text}). The "
                          f"store itself is intact up to its last checkpoint: move the log "
                          f"aside (mv {path}.wal {path}.wal.damaged) and open it again; the "
                          f"transactions only in the log are lost, so re-ingest the newest "
                          f"runs ('argus runs {path}' lists what is there).")
    return StoreError(f"{path}: cannot open as a DuckDB store ({text}). Check that no other "
                      "process writes it, close other connections to it in this process "
                      "(a store is open read-only or read-write, not both), and that it "
                      "is an argusdb store.")


def _connect_waiting(p: Path, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    """Connect, waiting up to ``timeout_s`` while another process holds the file's lock."""
    deadline = time.monotonic() + timeout_s
    told = False
    pause = 0.01
    while True:
        try:
            return _session(duckdb.connect(str(p), read_only=read_only, config=dict(_CONFIG)))
        except duckdb.Error as exc:
            text = str(exc)
            locked = "Could not set lock" in text or "Conflicting lock" in text
            if locked and time.monotonic() < deadline:
                if not told:
                    holder = text.split("Conflicting lock is held in", 1)[-1].strip() \
                        if "Conflicting lock is held in" in text else "another process"
                    sys.stderr.write(f"argus: {p} is locked by {holder}; waiting up to "
                                     f"{timeout_s:g} s (ARGUS_LOCK_TIMEOUT)\n")
                    told = True
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 1.5, 0.2)
                continue
            if locked:
                raise StoreError(f"{p}: still locked by another process after {timeout_s:g} s. "
                                 "Wait for it to finish, or raise ARGUS_LOCK_TIMEOUT (seconds)."
                                 ) from exc
            raise _open_error(str(p), exc) from exc


def _catalog_mark() -> str:
    """The end of ``store_meta``'s comment in a store whose catalog this release wrote."""
    return f" [catalog {catalog.fingerprint()}]"


class Store:
    """An argusdb store (DuckDB file)."""

    def __init__(self, path: str, con: duckdb.DuckDBPyConnection,
                 read_only: bool = False) -> None:
        self.path = path
        self.con = con
        self.read_only = read_only
        self._lock = threading.Lock()
        self._locked = False
        #: Bumped by every write path of this object; readers cache metadata against it.
        #: (DuckDB locks the file: no other process writes while this one has it open.)
        self.generation = 0
        #: The checker's metadata of this connection (argusdb.api.metadata), made on use.
        self.checker_metadata: Any = None
        self._watchdog = _WATCHDOG
        #: Plans of questions asked again in this generation (see :class:`_KeptPlans`).
        self._kept = _KeptPlans()
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
    def open(cls, path: str | Path, create: bool = False, read_only: bool = False,
             as_of: str | None = None, lock_timeout: float | None = None,
             _upgraded: bool = False) -> Store:
        """Open a store; with ``create`` make it (and its tables) when missing.

        ``path`` is a DuckDB file (the embedded store) or a ``ducklake:`` URI (a shared store,
        :mod:`argusdb.store.shared`). ``as_of`` (a snapshot number or an ISO timestamp) opens the
        store as it stood then, read-only. Another process's lock is waited for, up to
        ``lock_timeout`` seconds (default :func:`lock_timeout_s`).

        Raises:
            StoreError: the file is missing (without ``create``), locked past the wait, not a
                store, of a newer schema, or its write-ahead log lost a committed run.
        """
        if str(path).startswith(SHARED_PREFIX):
            from argusdb.store import shared as store_shared

            return store_shared.open_shared(str(path), create=create, read_only=read_only,
                                            as_of=as_of)
        if as_of is not None:
            from argusdb.store import versions as store_versions

            with cls.open(path, read_only=True, lock_timeout=lock_timeout) as src:
                return store_versions.as_of(src, as_of)
        p = Path(path)
        if not create and not p.exists():
            raise StoreError(f"{path}: no such store. Create it with 'argus init {path}'.")
        if p.exists() and p.is_dir():
            raise StoreError(f"{path}: is a directory. Name a store file, e.g. {p}/argus.duckdb.")
        if p.exists() and (what := _not_a_store(p)):
            raise StoreError(f"{path}: {what}. Name an argusdb store, or create one with "
                             f"'argus init NEW.duckdb'.")
        con = _connect_waiting(p, read_only, lock_timeout_s() if lock_timeout is None
                               else lock_timeout)
        st = cls(str(p), con, read_only)
        try:
            st._check_pending()
            version = st.schema_version()
            if version > SCHEMA_VERSION:
                raise StoreError(f"{path}: written by a newer argusdb (store schema {version}; "
                                 f"this release reads schema {SCHEMA_VERSION} and older). "
                                 "Upgrade argusdb to open it.")
            if version == 0 and (read_only or not create):
                raise StoreError(f"{path}: not an argusdb store (no 'run' table). "
                                 f"Create one with 'argus init'.")
            if read_only and (version < SCHEMA_VERSION or (
                    not _upgraded and not st.catalog_current())):
                # An older store migrates through a short read-write opening (which also
                # rebuilds what the older release materialized), then reopens; so does a
                # store whose views and macros another release wrote (a view this release
                # reads may be missing or differ there).
                # layers above the store: imported late
                from argusdb import checker
                from argusdb.store import materialize
                st.close()
                with cls.open(p, lock_timeout=lock_timeout) as w:
                    materialize.ensure_fresh(w)
                    # the checker's stored summaries are stamped with the modules: without
                    # this, every read-only question would rebuild them in TEMP (~3 s at 31 M
                    # rows) until the next ingest
                    checker.refresh_metadata(w)
                return cls.open(p, read_only=True, lock_timeout=lock_timeout, _upgraded=True)
            if not read_only:
                st.ensure_schema(version)
        except BaseException:
            st.close()
            raise
        return st

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
        st = cls(label, _session(duckdb.connect(":memory:", config=dict(_CONFIG))))
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
            return int(row[0])
        if self.has_table("run"):
            return 1
        row = self.con.execute("SELECT count(*) FROM duckdb_tables() WHERE NOT temporary"
                               ).fetchone()
        if row and row[0]:
            raise StoreError(f"{self.path}: a DuckDB database that is not an argusdb store (it "
                             "has tables, none of them 'run'). argusdb leaves it untouched; "
                             "name a new store file.")
        return 0

    def _check_pending(self) -> None:
        """Refuse a store whose WAL lost runs that were committed (see :meth:`transaction`)."""
        marker = _pending_path(Path(self.path))
        if not marker.exists():
            return
        runs = [r for r in marker.read_text().split() if r]
        missing = [r for r in runs if not (self.has_table("run") and self.run_exists(r))]
        if missing:
            raise StoreError(
                f"{self.path}: committed run(s) {', '.join(missing)} are missing: the write-ahead "
                f"log ({Path(self.path).name}.wal) that held them did not replay (it is damaged, "
                "truncated or was removed). The store file holds every run committed before "
                f"them. To accept that loss, delete {marker.name} and ingest those artefacts "
                "again.")
        if not self.read_only:
            self.con.execute("CHECKPOINT")
            marker.unlink(missing_ok=True)

    def close(self) -> None:
        _join_unwinding()  # interrupted queries still unwinding on this store's cursors
        self._kept.close()
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has_table(self, name: str) -> bool:
        # A literal, not a bound parameter: DuckDB's client imports pandas at the first bound
        # parameter (~0.4 s CPU, ~80 MiB), and a read-only question needs none.
        lit = "'" + name.replace("'", "''") + "'"
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

    def ensure_schema(self, version: int = SCHEMA_VERSION) -> None:
        """Create missing tables, (re)create views and macros, and copy the docs in; a store of
        an older schema ``version`` is migrated in the same transaction. A store of this
        schema whose catalog is this release's already (:meth:`catalog_current`) is left as
        it is: re-creating every view, macro and comment costs ~0.4 s CPU per command."""
        from argusdb.store import versions as store_versions

        if version == SCHEMA_VERSION and self.catalog_current():
            return
        try:
            self.con.execute("BEGIN")
            for mod in catalog.schema_modules():
                self.con.execute(mod.text)
            self.con.execute("CREATE SEQUENCE IF NOT EXISTS run_seq_gen START 1")
            store_versions.migrate(self, version)
            for mod in catalog.query_modules():
                self.con.execute(mod.text)
            for stmt in catalog.comment_statements():
                self.con.execute(stmt)
            doc = catalog.all_objects()["store_meta"].description.replace("'", "''")
            self.con.execute(f"COMMENT ON TABLE store_meta IS '{doc}{_catalog_mark()}'")
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            self.con.execute("ROLLBACK")
            raise StoreError(f"{self.path}: cannot create the argusdb schema ({exc}).") from exc
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # -- reading ---------------------------------------------------------------------------
    def sql(self, query: str, params: Sequence[Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run trusted SQL (library code only; user queries go through the checker)."""
        if query.lstrip().split(None, 1)[0].upper() not in _READS:
            self.generation += 1
        return self.con.execute(query, params or [])

    def arrow(self, query: str, params: Sequence[Any] | None = None) -> pa.Table:
        return self.con.execute(query, params or []).to_arrow_table()

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(query, params or [])
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
        spill = (self.spill_directory or "").replace("'", "''")
        for stmt in (f"SET temp_directory = '{spill}'",  # before external access goes
                     "SET autoinstall_known_extensions = false",
                     "SET autoload_known_extensions = false",
                     "SET allow_community_extensions = false",
                     "SET enable_external_access = false",
                     f"SET memory_limit = '{memory_limit or self.memory_limit}'",
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
                       max_bytes: int = MAX_BYTES, limit_s: float | None = None
                       ) -> list[tuple[pa.Table, str | None]]:
        """:meth:`stream_select` of several SELECTs at once, each on a cursor of its own in a
        worker thread of its own: DuckDB releases the GIL while a statement runs, so
        independent statements run side by side (on an idle machine, on separate cores).
        Each is checked by DuckDB's parser before any runs, and each has the caps and the
        time limit it would have alone (``timeout_s`` counts from this call for all of them).
        One statement whose kept plan ran quickly over the same data runs on the caller's
        thread (:meth:`_KeptPlans.quick`).

        Returns:
            Each answer and why it was cut short (or None), in the order of ``sqls``.

        Raises:
            QueryFailed: DuckDB rejected or interrupted one of them (the first in ``sqls``
                order; the others are interrupted, and waited for as :meth:`_guarded` waits).
        """
        self.lock_down()
        for sql in sqls:
            _one_select(self.con, sql)

        def fetch(cur: duckdb.DuckDBPyConnection) -> tuple[pa.Table, str | None]:
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

        if len(sqls) == 1 and self._kept.quick(self.generation, sqls[0], timeout_s):
            # A question alone, from a kept plan that ran quickly over the same data: on the
            # caller's thread, without a worker's start and hand-off (~0.4-1 ms CPU; under
            # load each hand-off waits for the scheduler). The watchdog still interrupts it.
            return [_Guarded(self, None, sqls[0], timeout_s, fetch, limit_s, own=True,
                             kept=self._kept).run()]
        running = [self._start(sql, timeout_s, fetch, limit_s, self._kept) for sql in sqls]
        return _results(running)

    @contextmanager
    def time_limit(self, timeout_s: float) -> Iterator[None]:
        """Interrupt this store's library SQL (reports, diffs) after ``timeout_s``."""
        with self._watchdog.limit(self.con, timeout_s):
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
        return _Guarded(self, cursor, sql, timeout_s, fetch, limit_s, own=False).run()

    def _start(self, sql: str, timeout_s: float, fetch: Any,
               limit_s: float | None = None, kept: _KeptPlans | None = None) -> _Guarded:
        """:meth:`_guarded` on a new cursor (or one of ``kept``), started in its worker
        thread; ``.result()`` waits for it."""
        guarded = _Guarded(self, None, sql, timeout_s, fetch, limit_s, own=True, kept=kept)
        guarded.start()
        return guarded

    def run_exists(self, run_id: str) -> bool:
        return bool(self.runs_present([run_id]))

    def runs_present(self, run_ids: Sequence[str]) -> set[str]:
        """Those of ``run_ids`` the store holds (one query for a command's runs)."""
        return {str(r) for (r,) in self.con.execute(
            "SELECT run_id FROM run WHERE list_contains(?::VARCHAR[], run_id)",
            [list(run_ids)]).fetchall()}

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; rolled back on any exception (including KeyboardInterrupt).

        A transaction that adds runs also records a snapshot (``store_snapshot``), and once it
        has committed the WAL is checkpointed into the store file, so losing the WAL cannot lose
        the run; until then a marker names the runs, and :meth:`open` refuses a store whose WAL
        did not give them back.
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
        try:
            yield self.con
            if snapshot:
                self._before_commit()
        except BaseException:
            self.con.execute("ROLLBACK")
            self._new_runs = []
            raise
        # The commit writes the appended rows' last row groups: on the threads they were
        # appended on (see _append_threads).
        with self._append_threads() if self._appended else nullcontext():
            self.con.execute("COMMIT")
        self.generation += 1

    def _before_commit(self) -> None:
        if self._new_runs:
            self.con.execute(
                "INSERT INTO store_snapshot SELECT coalesce((SELECT max(snapshot_id) FROM "
                "store_snapshot), 0) + 1, now()::TIMESTAMP, (SELECT max(run_seq) FROM run), "
                "'ingest', ?", [self._new_runs])

    def _after_commit(self) -> None:
        runs, self._new_runs = self._new_runs, []
        if not runs or not Path(self.path).is_file():
            return
        marker = _pending_path(Path(self.path))
        with open(marker, "w") as fh:
            fh.write("\n".join(runs) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        with suppress(duckdb.Error):   # another cursor's open transaction: the next one does
            self.con.execute("CHECKPOINT")
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
            "SELECT nextval('run_seq_gen') FROM range(?)", [n]).fetchall())

    def insert_row(self, table: str, row: dict[str, Any]) -> None:
        """Insert one row given as a dict; dicts and lists are stored as JSON."""
        self.generation += 1
        if table == "run":
            self._new_runs.append(str(row["run_id"]))
        cols = list(row)
        vals = [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                for v in row.values()]
        self.con.execute(f"INSERT {self._or_ignore(table)}INTO {table} ({', '.join(cols)}) "
                         f"VALUES ({', '.join('?' for _ in cols)})", vals)

    def _or_ignore(self, table: str) -> str:
        """'OR IGNORE ' for a table with a key (a row already there stays), else '' (DuckDB
        refuses OR IGNORE without one; such a table, e.g. observed_evidence, takes every row)."""
        keyed = self._keyed
        if keyed is None:
            keyed = self._keyed = {str(t) for (t,) in self.con.execute(
                "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE constraint_type "
                "IN ('PRIMARY KEY', 'UNIQUE')").fetchall()}
        return "OR IGNORE " if table in keyed else ""

    def insert_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """:meth:`insert_row` for many rows: one statement per set of columns."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(row), []).append(row)
        for cols, group in groups.items():
            self.generation += 1
            if table == "run":
                self._new_runs.extend(str(r["run_id"]) for r in group)
            one = f"({', '.join('?' for _ in cols)})"
            self.con.execute(
                f"INSERT {self._or_ignore(table)}INTO {table} ({', '.join(cols)}) VALUES "
                f"{', '.join(one for _ in group)}",
                [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                 for r in group for v in r.values()])

    def append_batch(self, table: str, batch: pa.RecordBatch | pa.Table,
                     columns: dict[str, str] | None = None) -> int:
        """Append ``batch`` to ``table``: each table column from ``columns`` (its library SQL
        expression over the batch: ingest's key formulas, :func:`argusdb.schema.shape.key_select`),
        else the batch's column of that name, else its default (NULL). Returns the rows
        appended.

        The batch is read as a relation, which DuckDB lets go once the statement ends
        (``register()`` keeps every batch until COMMIT, a run's whole file, ~2 KB per nsys
        launch; a locked-down instance has no replacement scans): memory stays bounded by the
        batch within a long transaction.
        """
        if batch.num_rows:
            self._appended = True
            have, exprs = set(batch.schema.names), columns or {}
            proj = ", ".join(exprs[c] if c in exprs else f'"{c}"' if c in have else
                             (default or "NULL") for c, default in self._column_defaults(table))
            with self._append_threads():
                self.con.from_arrow(batch).project(proj).insert_into(table)
            self.generation += 1
        return batch.num_rows

    def _column_defaults(self, table: str) -> list[tuple[str, str | None]]:
        """``table``'s columns in order, each with its default expression (None: none)."""
        cols = self._table_columns.get(table)
        if cols is None:
            cols = self._table_columns[table] = [
                (str(c), None if d is None else str(d)) for c, d in self.con.execute(
                    "SELECT column_name, column_default FROM duckdb_columns() "
                    "WHERE database_name = current_database() AND schema_name = "
                    "current_schema() AND table_name = ? "
                    "ORDER BY column_index", [table]).fetchall()]
        return cols

    @contextmanager
    def _append_threads(self) -> Iterator[None]:
        """Run DuckDB on :attr:`append_threads` threads (one unless an ingest raised it) for
        an append of Arrow rows, then as before: with Python parsing beside it, its parallel
        insert (each thread compressing its own row groups, then merged) cost about twice the
        CPU and wall time of a serial one for the same rows (``bench/bench_ingest_many.py``
        times both for the raw append). A locked-down instance keeps its setting (``argus
        ingest`` locks it with the threads it chose, see :attr:`threads`)."""
        if self._locked:
            yield
            return
        row = self.con.execute("SELECT current_setting('threads')").fetchone()
        threads = int(row[0]) if row else 1
        if threads == self.append_threads:
            yield
            return
        self.con.execute(f"SET threads = {int(self.append_threads)}")
        try:
            yield
        finally:
            self.con.execute(f"SET threads = {threads}")


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
