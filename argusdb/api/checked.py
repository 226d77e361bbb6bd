"""Checked questions over a store: the one adapter between the store and the checker.

The checker (:mod:`argusdb.checker`) is a pure function of a question's text, the catalog and
a :class:`~argusdb.checker.metadata.Metadata`; it imports no store. This module gives a
store's Metadata (:class:`~argusdb.api.metadata.StoreMetadata`, kept on the store object),
checks against it, and runs an accepted question on the store with the same caps a
:class:`~argusdb.api.Connection` applies (time limit, rows, bytes).

Example:
    >>> from argusdb.store import open_store
    >>> with open_store("argus.duckdb", read_only=True) as store:
    ...     [f.code for f in check("SELECT median(value) FROM evidence", store)][:1]
    ['AR01']
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from argusdb.errors import Finding, QueryFailed, QueryRefused
from argusdb.store.embedded import Store
from argusdb.store.guard import MAX_BYTES, MAX_ROWS, spent_s

if TYPE_CHECKING:  # run_reports runs a kept check without the checker (argusdb.api.kept)
    import pyarrow as pa

    from argusdb.api.kept import KeptCheck
    from argusdb.checker import Metadata, Report

#: Default time limit of a checked question, seconds (``argusdb.checker.TIMEOUT_S``).
TIMEOUT_S = 30.0

__all__ = ["analyse", "check", "execute", "explain", "metadata_of", "refresh_metadata",
           "run_reports"]


def metadata_of(source: Store | Metadata | None) -> Metadata | None:
    """The Metadata of a store (kept on the Store object), or ``source`` itself."""
    from argusdb.api.metadata import StoreMetadata

    if isinstance(source, Store):
        return StoreMetadata.of(source)
    return source


def analyse(sql: str, source: Store | Metadata | None = None) -> Report:
    """:func:`argusdb.checker.analyse` against a store or any Metadata."""
    from argusdb import checker

    return checker.analyse(sql, metadata_of(source))


def check(sql: str, source: Store | Metadata | None = None) -> list[Finding]:
    """Findings for ``sql`` against a store or any Metadata; empty when it may run."""
    from argusdb import checker

    return checker.check(sql, metadata_of(source))


def explain(sql: str, source: Store | Metadata | None = None) -> dict[str, Any]:
    """Provenance of the answer ``sql`` would get (see :func:`argusdb.checker.explain`)."""
    from argusdb import checker

    return checker.explain(sql, metadata_of(source))


def refresh_metadata(store: Store, runs: Iterable[str] | None = None) -> str:
    """Bring the store's metadata summary of ``evidence`` up to date after an ingest (a write
    path; checks never write), so later connections need not rebuild it in memory. With
    ``runs`` (the runs just ingested) only their rows are summarised again."""
    from argusdb.api.metadata import refresh as _refresh

    return _refresh(store, runs)


def run_reports(store: Store, reports: Sequence[Report | KeptCheck], start: float,
                timeout_s: float, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES,
                limit: int | None = None, as_rows: bool = False,
                start_cpu: float | None = None) -> list[tuple[pa.Table, str | None]]:
    """Run accepted reports' statements together within what is left of the time limit
    (counted from ``start``, monotonic seconds); without ``limit`` an answer past the caps
    raises. Each answer comes with why it was cut (None when whole); with ``as_rows`` each
    answer is :class:`~argusdb.store.embedded.Rows`, not an Arrow table. With ``start_cpu``
    (``time.process_time()`` at ``start``) the time used so far is the lesser of wall and CPU
    seconds, as the watchdog counts it (:func:`argusdb.store.guard.spent_s`): a busy machine
    slows a question, and does not refuse it."""
    rows = max_rows if limit is None else max(0, min(int(limit), max_rows))
    # The time limit covers the whole question: what the check took is not left to run.
    left = timeout_s - (time.monotonic() - start if start_cpu is None
                        else spent_s(start, start_cpu))
    if left <= 0:
        raise QueryFailed(f"the query ran longer than {timeout_s:g} s (in the checker) and "
                          "was stopped", "ask a shorter, simpler question or raise the time "
                          "limit (--timeout)")
    out = store.stream_selects([r.executable for r in reports], left, rows, max_bytes,
                               limit_s=timeout_s, as_rows=as_rows)
    for _, cut in out:
        if cut and limit is None:
            raise QueryFailed(cut, "aggregate, filter or add a LIMIT to the query, or ask "
                              "for the first rows only (limit=N, 'argus query --limit N')")
    return out


def execute(sql: str, store: Store, timeout_s: float = TIMEOUT_S,
            max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES) -> pa.Table:
    """Check ``sql`` against ``store`` and run it read-only with a connection's caps.

    Raises:
        QueryRefused: the checker refused it.
        QueryFailed: DuckDB rejected it, it ran past the time limit, or its answer is larger
            than the caps.
    """
    start, start_cpu = time.monotonic(), time.process_time()
    report = analyse(sql, store)
    if not report.ok:
        raise QueryRefused(report.findings)
    ((table, _),) = run_reports(store, [report], start, timeout_s, max_rows, max_bytes,
                                start_cpu=start_cpu)
    return table
