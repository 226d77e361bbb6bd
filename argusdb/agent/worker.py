"""The MCP server's worker: one child process that holds one read-only connection and answers.

The server process never opens the store itself: every tool call is a message to this worker
(over a pipe) and its JSON answer comes back. That gives each call hard bounds that an
in-process library call cannot have:

- **no writes**: the worker's connection is read-only (and each question runs in a READ ONLY
  transaction besides);
- **time**: a question that ignores DuckDB's interrupt (one operator over a huge list) ends
  the worker; the server answers the time-limit error and starts a fresh worker on the next
  call, so no call outlives its limit by more than about a second;
- **memory**: DuckDB's memory limit, the worker's address space capped at ``WORKER_MEMORY``
  (a huge list or string fails as DuckDB's out-of-memory error), a cap on rows and bytes of
  an answer, and a worker whose
  resident memory passes ``MAX_WORKER_RSS`` is replaced between calls; an out-of-memory kill
  ends the worker, never the server;
- **threads**: one connection for the worker's life, one watchdog thread in it; nothing per
  call. When no call comes for ``IDLE_S`` seconds the connection is closed, so ingests (which
  need the store's write lock) are not kept waiting by an idle agent.

``observe_plan`` reads source files only under the configured roots, at most
``MAX_SOURCE_BYTES``, regular ``.py`` files; for any other path the error is one text that
says nothing about what is there.

Example:
    >>> w = Worker("argus.duckdb")
    >>> w.call("query", {"sql": "SELECT count(*) AS n FROM run"})[0]["rows"]
    [[14]]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

from argusdb.answers.wire import dumps

#: Exit status of a worker that ended itself at a query's hard deadline.
OVERRUN_EXIT = 86
#: Seconds without a call after which the worker closes the store (and frees its lock).
IDLE_S = 2.0
#: A worker whose resident memory passes this many bytes is replaced between calls.
MAX_WORKER_RSS = 2 * 2**30
#: Largest source file observe_plan reads.
MAX_SOURCE_BYTES = 2**20
#: Address space of the worker: an expression that builds a huge list fails in DuckDB.
WORKER_MEMORY = 6 * 2**30
#: Rows one query answer may return at most (the agent's max_rows is clamped to it).
MAX_ROWS = 10_000
#: Bytes one answer may hold at most.
MAX_BYTES = 16 * 2**20


@dataclass
class Limits:
    """What one call may use."""

    timeout_s: float = 30.0
    memory_limit: str = "1GB"
    max_rows: int = MAX_ROWS
    max_bytes: int = MAX_BYTES
    roots: list[str] = field(default_factory=list)
    idle_s: float = IDLE_S


def _envelope(exc: BaseException) -> dict[str, Any]:
    from argusdb.errors import ArgusError

    if isinstance(exc, ArgusError):
        findings = getattr(exc, "findings", None)
        return {"ok": False, "errors": [f.to_json() for f in findings] if findings
                else [exc.to_json()]}
    return {"ok": False, "errors": [{"code": "E999", "message": (
        f"argusdb could not answer this call ({type(exc).__name__}); it is refused, and "
        f"nothing was written. Report it as an argusdb bug with the arguments you sent")}]}


# -- worker side ------------------------------------------------------------------------------
def source_under_roots(source: str, roots: list[str]) -> Path:
    """The regular .py file ``source`` names under one of ``roots`` (symlinks resolved).

    Raises:
        UsageError: with one text for every path it refuses, so the error tells nothing
            about files outside the roots (whether they exist, what they contain).
    """
    from argusdb.errors import UsageError

    refused = UsageError(
        "source must name a Python source file (.py, at most "
        f"{MAX_SOURCE_BYTES // 1024} KiB) under the server's source roots "
        f"({', '.join(Path(r).name + '/' for r in roots) or 'none configured'}); start "
        "'argus mcp' with --source-root to allow another folder")
    if not isinstance(source, str) or not source or "\x00" in source or not roots:
        raise refused
    try:
        path = Path(source).expanduser().resolve(strict=True)
        inside = any(path.is_relative_to(Path(r).resolve()) for r in roots)
        if not inside:
            raise refused
        st = path.stat()
    except (OSError, RuntimeError, ValueError):
        raise refused from None
    if path.suffix != ".py" or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
        raise refused
    return path


#: Tools that are argusdb's own answers (their time limits count CPU, see :func:`worker_main`).
BUILT_IN = frozenset({"report", "diff", "trajectory"})


def _tools(limits: Limits) -> dict[str, Callable[..., dict[str, Any]]]:
    from argusdb.answers.diff import diff
    from argusdb.answers.report import report
    from argusdb.answers.sufficiency import empty_answer
    from argusdb.answers.trajectory import trajectory
    from argusdb.api import Connection

    def query(c: Connection, sql: str, max_rows: int = 1000) -> dict[str, Any]:
        n = max(0, min(int(max_rows), limits.max_rows))
        table, prov = c.query_with_provenance(sql, limit=n)
        if (gap := empty_answer(c, sql, table)) is not None:
            raise gap  # no evidence: the error names the observe request that would make it
        return {"ok": True, "columns": table.column_names,
                "rows": [list(r.values()) for r in table.to_pylist()],
                "row_count": table.num_rows, "truncated": prov["truncated"]}

    def check(c: Connection, sql: str) -> dict[str, Any]:
        findings = c.check(sql)
        return {"ok": not findings, "findings": [f.to_json() for f in findings]}

    def explain(c: Connection, sql: str) -> dict[str, Any]:
        return dict(c.explain(sql))

    def report_(c: Connection, region: str, versions: list[str] | None = None,
                signals: list[str] | None = None, **kw: Any) -> dict[str, Any]:
        return report(c, region, versions, signals=signals, **kw).to_json()

    def diff_(c: Connection, region: str, from_version: str, to_version: str,
              signals: list[str] | None = None) -> dict[str, Any]:
        return diff(c, region, from_version, to_version, signals).to_json()

    def trajectory_(c: Connection, versions: list[str], regions: list[str] | None = None,
                    signals: list[str] | None = None) -> dict[str, Any]:
        return trajectory(c, regions, list(versions), signals).to_json()

    def observe_plan(c: Connection, region: str, signals: list[str] | str, source: str,
                     scope: dict[str, str] | None = None,
                     options: dict[str, str] | None = None) -> dict[str, Any]:
        from argusdb.observe import observe

        if isinstance(signals, str):  # "a,b", as the CLI and the Python API take it
            signals = [s.strip() for s in signals.split(",") if s.strip()]
        path = source_under_roots(source, limits.roots)
        obs = observe(region, signals, scope, store=c.store, source=str(path), dry_run=True,
                      options=options)
        return {"ok": True, "plan": obs.plan.to_json(), "summary": obs.report}

    return {"query": query, "check": check, "explain": explain, "report": report_,
            "diff": diff_, "trajectory": trajectory_, "observe_plan": observe_plan}


def worker_main(pipe: Pipe, store: str, limits: Limits) -> None:
    """The worker process: answer calls from ``pipe`` until it closes."""
    os.dup2(2, 1)  # stray output of anything in here must never reach the MCP wire
    from argusdb.api import Connection, cap_process_memory, connect, deadline
    from argusdb.store.guard import set_overrun_handler

    set_overrun_handler(lambda: os._exit(OVERRUN_EXIT))
    cap_process_memory(WORKER_MEMORY)
    tools = _tools(limits)
    db: Connection | None = None
    pipe.send("ready")
    while True:
        try:
            if not pipe.poll(limits.idle_s):
                if db is not None:  # idle: let writers take the store's lock
                    db.close()
                    db = None
                continue
            request = pipe.recv()
        except (EOFError, OSError):
            break
        if request is None:
            break
        tool, args = request
        try:
            if db is None:
                db = connect(store, read_only=True, timeout_s=limits.timeout_s,
                             max_rows=limits.max_rows, max_bytes=limits.max_bytes)
                db.store.memory_limit = limits.memory_limit
            # the built-in answers' limits count CPU (a busy machine slows them, never
            # refuses them); a user's SQL keeps wall seconds
            db.cpu_time = tool in BUILT_IN
            with deadline(limits.timeout_s, cpu=db.cpu_time), \
                    db.store.time_limit(limits.timeout_s):
                doc, error = tools[tool](db, **args), False
        except Exception as exc:
            doc, error = _envelope(exc), True
            if not hasattr(exc, "exit_code") and db is not None:
                db.close()  # an unexpected failure: start the next call on a fresh connection
                db = None
        pipe.send((json.loads(dumps(doc, default=str)), error))
    if db is not None:
        db.close()


# -- server side ------------------------------------------------------------------------------
class Worker:
    """The server's handle on its worker process (started on the first call)."""

    #: Seconds a fresh worker may take to import and report ready.
    START_S = 120.0

    def __init__(self, store: str, limits: Limits | None = None) -> None:
        self.store = store
        self.limits = limits or Limits()
        self._proc: Any = None
        self._pipe: Pipe | None = None
        self._ready = False
        #: Workers started so far (a worker ended at a deadline is replaced at once).
        self.started = 0

    def spawn(self) -> None:
        """Start a worker; it imports and reports ready while the server goes on."""
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker_main, args=(child, self.store, self.limits),
                           name="argus-mcp-worker", daemon=True)
        proc.start()
        child.close()
        self._proc, self._pipe, self._ready = proc, parent, False
        self.started += 1

    def _start(self) -> Pipe:
        """The pipe of a worker that is ready (spawned now if there is none)."""
        if self._proc is None or not self._proc.is_alive():
            self._stop(kill=True)
            self.spawn()
        assert self._pipe is not None
        if not self._ready:
            if not self._pipe.poll(self.START_S) or self._pipe.recv() != "ready":
                self._stop(kill=True)
                raise RuntimeError("the argusdb worker did not start")
            self._ready = True
        return self._pipe

    def _stop(self, kill: bool) -> int | None:
        proc, pipe = self._proc, self._pipe
        self._proc = self._pipe = None
        if proc is None:
            return None
        if kill:
            proc.kill()
        elif pipe is not None:
            try:
                pipe.send(None)
            except OSError:
                proc.kill()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        if pipe is not None:
            pipe.close()
        code: int | None = proc.exitcode
        proc.close()
        return code

    def close(self) -> None:
        self._stop(kill=False)

    def rss(self) -> int:
        """Resident bytes of the worker (0 when none runs, or not on Linux)."""
        try:
            with open(f"/proc/{self._proc.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            return 0

    def call(self, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The JSON answer of ``tool`` and whether it is an error (the CLI's envelope)."""
        from argusdb.errors import QueryFailed

        timed_out = False
        try:
            pipe = self._start()
            pipe.send((tool, args))
            # The worker interrupts at the limit and ends itself a grace period later.
            if pipe.poll(self.limits.timeout_s + 5.0):
                doc, error = pipe.recv()
                if self.rss() > MAX_WORKER_RSS:
                    self._stop(kill=False)
                return doc, error
            timed_out = True
        except (EOFError, OSError, RuntimeError):
            pass
        code = self._stop(kill=True)
        if timed_out or code == OVERRUN_EXIT:
            exc = QueryFailed(f"the call ran longer than {self.limits.timeout_s:g} s and was "
                              f"stopped", "narrow it (filter by region, run or signal)")
        else:
            exc = QueryFailed(f"the call ended its worker (exit status {code}; out of "
                              f"memory?) and was stopped", "narrow it (filter by region, run "
                              "or signal), or aggregate")
        self.spawn()  # the next call finds a worker that has had time to start
        return _envelope(exc), True
