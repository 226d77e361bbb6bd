"""PostgreSQL going away under a shared store: which errors say so, and the bounded retry
that a restart needs.

A restarting server answers, in turn, "terminating connection" or "server closed the
connection" (the sessions it ends), "the database system is shutting down", a refused
connection (the port closed), then "the database system is starting up". All of them say
nothing was done by the statement that got them; a read outside a write is run again on a new
connection, a write is redone whole by :meth:`argusdb.store.shared.SharedStore.retrying`
(its catalog commit is one PostgreSQL transaction: rolled back, never half done).

Example:
    >>> lost_connection(RuntimeError("server closed the connection unexpectedly"))
    True
    >>> lost_connection(RuntimeError("Catalog Error: Table with name x does not exist!"))
    False
    >>> [round(pause(i), 1) for i in range(MAX_RECONNECTS)]
    [1.0, 2.0, 4.0, 8.0]
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TypeVar

import duckdb

T = TypeVar("T")

#: Attempts of one write (or one open, or one read) whose connection to PostgreSQL was lost;
#: the pauses between them grow to ~8 s (a restarting server needs a few seconds).
MAX_RECONNECTS = 4
#: What DuckDB's and psycopg's messages say when PostgreSQL went away.
_LOST = re.compile(r"connection|server closed|terminating|could not receive|could not send|"
                   r"SSL SYSCALL|broken pipe|EOF detected|admin_shutdown|shutting down|"
                   r"the database system is|Connection refused|no connection",
                   re.IGNORECASE)


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (DuckDB's carry the whole statement after it)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to PostgreSQL went away (not a refused statement)."""
    return bool(_LOST.search(str(exc))) and not isinstance(exc, duckdb.CatalogException)


def pause(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (1, 2, 4, then 8 s)."""
    return float(min(2.0 ** attempt, 8.0))


def reconnecting(work: Callable[[], T], lost: Callable[[BaseException], bool],
                 again: Callable[[], None] | None = None) -> T:
    """``work()``; when it fails with an error that ``lost`` says is a lost connection, pause,
    call ``again()`` (a new connection) and run it again, at most :data:`MAX_RECONNECTS`
    times in all; the last such error is raised."""
    for attempt in range(MAX_RECONNECTS):
        try:
            return work()
        except Exception as exc:
            if not lost(exc) or attempt == MAX_RECONNECTS - 1:
                raise
        time.sleep(pause(attempt))
        if again is not None:
            again()
    raise AssertionError("unreachable")  # the loop returns or raises
