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

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from argusdb.errors import Finding, QueryFailed, QueryRefused
from argusdb.store.embedded import Store
from argusdb.store.guard import MAX_BYTES, MAX_ROWS

if TYPE_CHECKING:  # run_reports runs a kept check without the checker (argusdb.api.kept)
    import pyarrow as pa

    from argusdb.api.kept import KeptCheck
    from argusdb.checker import Metadata, Report
    from argusdb.checker.budget import Spent

#: Default time limit of a checked question, seconds (``argusdb.checker.TIMEOUT_S``).
TIMEOUT_S = 30.0

__all__ = ["analyse", "check", "check_budget", "execute", "explain", "metadata_of",
           "refresh_metadata", "run_reports"]


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


#: How a caller raises the time limit (every command that asks questions has the option).
TIMEOUT_OPTION = "--timeout; timeout_s of argusdb.connect"


@contextmanager
def check_budget(timeout_s: float) -> Iterator[Spent]:
    """The checks of one call, bounded by the time limit in CPU seconds of this process
    (:mod:`argusdb.checker.budget`: a busy machine slows a check, it does not refuse it);
    past it, the time-limit error. Yields what they used (``.seconds``, once done)."""
    from argusdb.checker.budget import CheckOverrun, cpu_budget

    try:
        with cpu_budget(timeout_s) as spent:
            yield spent
    except CheckOverrun as exc:
        raise QueryFailed(f"checking the query used more than {timeout_s:g} s of CPU "
                          f"({exc.spent_s:.1f} s) and was stopped",
                          "ask a shorter, simpler question (fewer CTEs, subqueries and "
                          f"nesting levels) or raise the time limit ({TIMEOUT_OPTION})"
                          ) from None


def run_reports(store: Store, reports: Sequence[Report | KeptCheck], check_cpu_s: float,
                timeout_s: float, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES,
                limit: int | None = None, as_rows: bool = False
                ) -> list[tuple[pa.Table, str | None]]:
    """Run accepted reports' statements together within what is left of the time limit once
    the CPU seconds their checks used (``check_cpu_s``, see :func:`check_budget`) are taken
    off it; without ``limit`` an answer past the caps raises. Each answer comes with why it
    was cut (None when whole); with ``as_rows`` each answer is
    :class:`~argusdb.store.guard.Rows`, not an Arrow table."""
    rows = max_rows if limit is None else max(0, min(int(limit), max_rows))
    # The time limit covers the whole question: what the check used is not left to run.
    left = timeout_s - check_cpu_s
    if left <= 0:
        raise QueryFailed(f"checking the query used more than {timeout_s:g} s of CPU "
                          f"({check_cpu_s:.1f} s)", "ask a shorter, simpler question or "
                          f"raise the time limit ({TIMEOUT_OPTION})")
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
    with check_budget(timeout_s) as spent:
        report = analyse(sql, store)
    if not report.ok:
        raise QueryRefused(report.findings)
    ((table, _),) = run_reports(store, [report], spent.seconds, timeout_s, max_rows, max_bytes)
    return table
