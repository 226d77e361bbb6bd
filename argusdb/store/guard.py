"""The query guard: time limits on DuckDB statements, the watchdog that interrupts them, kept
plans of questions asked again, and the check that a text is one SELECT.

A statement runs on the caller's thread or in a worker thread (:class:`Guarded`); the shared
watchdog (:class:`Watchdog`) interrupts a cursor past its deadline, and a statement still
unwinding after the interrupt is waited for at close (:func:`join_unwinding`). Nothing here
opens a store: :class:`argusdb.store.embedded.Store` hands its connection in.
"""

from __future__ import annotations

import atexit
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, NamedTuple, Protocol

import duckdb

from argusdb.errors import QueryFailed


class Rows(NamedTuple):
    """An answer as Python rows (:meth:`Store.stream_selects` with ``as_rows``): what a
    command that prints the answer needs, without loading Arrow (~0.2 s CPU a process)."""

    #: The answer's column names, in order.
    columns: list[str]
    #: The rows, as DuckDB's Python client gives them.
    rows: list[tuple[Any, ...]]

    @property
    def num_rows(self) -> int:
        return len(self.rows)


class GuardedStore(Protocol):
    """What a guarded statement needs of its store: the connection, the write generation
    and the watchdog."""

    con: duckdb.DuckDBPyConnection
    generation: int
    _watchdog: Watchdog

#: Leading keywords of library SQL that only reads (does not bump the write generation).
READS = frozenset({"SELECT", "WITH", "FROM", "VALUES", "DESCRIBE", "SHOW", "SUMMARIZE",
                    "EXPLAIN"})
#: Seconds a caller waits, past its time limit and the watchdog's grace, for an interrupted
#: query to unwind before it interrupts it again and waits for it to end (see
#: :meth:`Guarded.result`).
ABANDON_S = 0.4
#: A limit that counts CPU (a store's ``count_cpu``: the built-in answers') passes once both
#: its wall seconds and this process's CPU seconds have: on a busy machine such an answer gets
#: less CPU per second, so it is slowed, never refused for it (at load 18 on 2 cores, a 6 s CPU
#: diff took over 30 s wall). Past this many times the limit in wall seconds it stops anyway
#: (a statement that waits, using no CPU). Other limits count wall seconds.
WALL_BACKSTOP = 10.0
#: Longest sleep of the watchdog while a limit's wall time has passed but its CPU time not.
CPU_POLL_S = 1.0
#: Most seconds a caller then waits for an interrupted operator to end (``repeat('x', 2^31)``
#: builds its 2 GiB string without looking at its interrupt: 10-25 s on a loaded 2-core
#: machine); past it the query is left to finish in the background.
UNWIND_MAX_S = 120.0
#: Caps of one user answer: rows, and bytes of its Arrow batches.
MAX_ROWS = 1_000_000
MAX_BYTES = 256 * 2**20


def spent_s(wall0: float, cpu0: float) -> float:
    """Seconds of a time limit used since ``wall0`` (``time.monotonic()``) and ``cpu0``
    (``time.process_time()``): the lesser of wall and process CPU seconds (see
    :data:`WALL_BACKSTOP`), or the wall seconds over the backstop factor when that is more."""
    wall = time.monotonic() - wall0
    return max(min(wall, time.process_time() - cpu0), wall / WALL_BACKSTOP)


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class Watchdog:
    """One daemon thread per process that interrupts cursors past their deadline (for a
    limit that counts CPU, once its wall seconds and the process's CPU seconds since it began
    have both passed it: :func:`spent_s`).

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
        #: key -> (wall start, CPU start, limit seconds): what decides whether a deadline
        #: whose wall time has come is due (:func:`spent_s`).
        self._began: dict[int, tuple[float, float, float]] = {}
        self._thread: threading.Thread | None = None
        self._next_key = 0
        #: When the thread wakes next unless notified (monotonic seconds; inf: not before).
        self._until = math.inf

    @contextmanager
    def limit(self, cur: Any, timeout_s: float, cpu: bool = False) -> Iterator[None]:
        with self._cond:
            self._next_key += 1
            key = self._next_key
            now = time.monotonic()
            due = now + timeout_s
            self._deadlines[key] = (due, cur, False)
            if cpu:
                self._began[key] = (now, time.process_time(), timeout_s)
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
                self._began.pop(key, None)

    def _left(self, key: int) -> float:
        """Seconds the limit of ``key`` has still to spend (see :func:`spent_s`)."""
        wall0, cpu0, limit = self._began.get(key, (0.0, 0.0, 0.0))
        return limit - spent_s(wall0, cpu0)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [(k, c, hit) for k, (d, c, hit) in self._deadlines.items() if d <= now]
                for k, c, hit in list(due):
                    left = self._left(k)
                    if not hit and left > 0:  # wall time passed, CPU time not: look again
                        self._deadlines[k] = (now + min(left, CPU_POLL_S), c, False)
                        due.remove((k, c, hit))
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


WATCHDOG = Watchdog()
#: Query threads whose caller stopped waiting (see ``Store._guarded``): joined before the
#: store closes and before the interpreter exits (a thread still inside DuckDB at exit aborts
#: the process).
UNWINDING: set[threading.Thread] = set()
UNWINDING_LOCK = threading.Lock()


def join_unwinding() -> None:
    with UNWINDING_LOCK:
        threads = list(UNWINDING)
    for t in threads:
        t.join()


atexit.register(join_unwinding)
_OVERRUN: Callable[[], None] | None = None


class _Deadline:
    """A watchdog entry with nothing to interrupt: only the overrun handler acts on it."""

    def interrupt(self) -> None:
        pass


def deadline(timeout_s: float, cpu: bool = False) -> AbstractContextManager[None]:
    """A hard deadline for a whole call (opening, checking, running, printing): past
    ``timeout_s`` plus the watchdog's grace the overrun handler runs, if one is set. With
    ``cpu`` the deadline counts CPU as well as wall seconds (:data:`WALL_BACKSTOP`): a
    built-in answer on a busy machine is slowed, not stopped."""
    return WATCHDOG.limit(_Deadline(), timeout_s, cpu=cpu)


def set_overrun_handler(handler: Callable[[], None] | None) -> Callable[[], None] | None:
    """What to do when a query ignores its interrupt for ``Watchdog.GRACE_S`` seconds.

    Processes that exist to answer one caller (the CLI, the MCP server's worker) end
    themselves there; a library caller keeps the default (None: wait for the operator).
    """
    global _OVERRUN
    previous, _OVERRUN = _OVERRUN, handler
    return previous


def one_select(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise QueryFailed unless DuckDB's parser reads ``sql`` as exactly one SELECT."""
    try:
        stmts = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryFailed(f"DuckDB cannot parse the query: {first_line(exc)}",
                          "write one SELECT statement in DuckDB SQL") from exc
    if len(stmts) != 1 or stmts[0].type != duckdb.StatementType.SELECT:
        raise QueryFailed("DuckDB reads this as something other than one SELECT",
                          "ask one read-only SELECT question")


#: Most statements a store keeps planned (see :class:`KeptPlans`).
KEPT_PLANS = 16
#: Name of the prepared statement on a kept cursor.
_KEPT_NAME = "_argus_kept"
#: A question alone whose kept plan ran within this many seconds (and a tenth of its time
#: limit) runs on the caller's thread (see :meth:`Store.stream_selects`).
QUICK_S = 0.25


class KeptPlans:
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


class Guarded:
    """One library or user statement under the time limit (see ``Store._guarded``): run on
    the caller's thread (:meth:`run`), or in a worker thread (:meth:`start`, then
    :meth:`result`), which the caller stops waiting for past the limit. With ``kept``, a
    question runs from a kept plan where it may (:class:`KeptPlans`)."""

    def __init__(self, store: GuardedStore, cur: duckdb.DuckDBPyConnection | None, sql: str,
                 timeout_s: float, fetch: Any, limit_s: float | None, own: bool,
                 kept: KeptPlans | None = None) -> None:
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
        #: Whether the limit counts CPU as well as wall seconds (the store's ``count_cpu``).
        self.cpu = bool(getattr(store, "count_cpu", False))
        #: When the caller stops waiting (monotonic seconds): :data:`ABANDON_S` after the
        #: watchdog's grace from the interrupt, or past the (wall backstop of the) limit.
        self.give_up = time.monotonic() + timeout_s * (WALL_BACKSTOP if self.cpu else 1.0) \
            + Watchdog.GRACE_S + ABANDON_S
        #: When the statement was interrupted (monotonic seconds; None: not yet).
        self.interrupted_at: float | None = None

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
            with self.store._watchdog.limit(self, self.timeout_s, cpu=self.cpu):
                try:
                    out = self.fetch(cur.execute(self._statement(cur)))
                except duckdb.InterruptException as exc:
                    self.outcome["stopped"] = True
                    raise self.stopped(exc) from exc
                except duckdb.Error as exc:
                    raise QueryFailed(f"DuckDB could not run the query: "
                                      f"{first_line(exc)}", "fix the query; 'argus "
                                      "explain' shows what it reads") from exc
                except Exception as exc:
                    # DuckDB's Arrow export raises OSError for a column type Arrow has no
                    # form of (get_type(...) is TYPE, variant_normalize(...) VARIANT). Arrow
                    # is looked up, not imported: an answer read as rows never loads it.
                    arrow = sys.modules.get("pyarrow")
                    if not isinstance(exc, OSError) and not (
                            arrow is not None and isinstance(exc, arrow.ArrowException)):
                        raise
                    raise QueryFailed(f"the answer cannot be handed over: "
                                      f"{first_line(exc)}", "cast that column to a plain "
                                      "type, e.g. CAST(... AS VARCHAR)") from exc
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
            with UNWINDING_LOCK:
                UNWINDING.discard(threading.current_thread())

    def start(self) -> None:
        self.thread = threading.Thread(target=self._work, daemon=True, name="argus-query")
        self.thread.start()

    def interrupt(self) -> None:
        if self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
        with suppress(Exception):
            self.cur.interrupt()

    def _waited(self) -> float:
        """When the caller stops waiting for the worker thread (monotonic seconds)."""
        if self.interrupted_at is not None:
            return min(self.give_up, self.interrupted_at + Watchdog.GRACE_S + ABANDON_S)
        return self.give_up

    def result(self) -> Any:
        thread = self.thread
        assert thread is not None, "start() first"
        try:
            while thread.is_alive() and (wait := self._waited() - time.monotonic()) > 0:
                thread.join(min(wait, CPU_POLL_S / 4))  # the watchdog may interrupt it
        except BaseException:  # KeyboardInterrupt while waiting: stop the query too
            self.interrupt()
            raise
        if thread.is_alive():
            # Interrupted and still inside an operator that does not look at its interrupt:
            # wait for it. A query left to finish in the background kept its memory and a
            # thread: on one long-lived connection, 18 of them took the process from 1.0 to
            # 6.3 GB of address space until no query, not even SELECT 1, could start.
            self.interrupt()
            with UNWINDING_LOCK:
                if thread.is_alive():
                    UNWINDING.add(thread)
            try:
                thread.join(UNWIND_MAX_S)
            except BaseException:  # KeyboardInterrupt while waiting: it goes on unwinding
                self.interrupt()
                raise
            if thread.is_alive():
                raise self.stopped()
            trim_heap()
            raise self.stopped(self.outcome.get("error"))
        if "error" in self.outcome:
            if self.outcome.get("stopped"):
                trim_heap()
            raise self.outcome["error"]
        return self.outcome["value"]


def trim_heap() -> None:
    """Give the C heap's free pages back to the system after an interrupted query (glibc's
    ``malloc_trim``; elsewhere nothing): the gigabytes a runaway expression allocated and
    freed otherwise stay in the process's resident set."""
    global _LIBC
    if _LIBC is None:
        import ctypes
        import ctypes.util
        import sys

        name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
        try:
            _LIBC = ctypes.CDLL(name) if name else False
        except OSError:
            _LIBC = False
    if _LIBC and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def results(running: list[Guarded]) -> list[Any]:
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
