"""The Python API: ``argusdb.connect(path)``.

Example:
    >>> db = argusdb.connect("argus.duckdb")
    >>> db.query("SELECT signal, count(*) FROM evidence GROUP BY signal")
    >>> db.check("SELECT median(value) FROM evidence")       # [Finding(code='AR01', ...)]
    >>> db.explain("SELECT * FROM version_diff('duration', 'a1', 'b2')")["program_versions"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb import checker, materialize
from argusdb.errors import Finding
from argusdb.ingest import IngestResult, ingest_path
from argusdb.regions import ProgramSource
from argusdb.store import Store


class Connection:
    """A connection to one store; user SQL is checked before it runs, read-only.

    Materialized views (attribution, derivation) are refreshed before a question is checked,
    so neither the checker's metadata nor the answer rests on stale rows.

    Args:
        path: the store file.
        create: make the store when missing.
        read_only: open the file read-only (DuckDB then refuses every write itself); a stale
            store is first refreshed through a short read-write opening.
        timeout_s: time limit of one query, seconds.
        as_of: answer as the store stood at this snapshot (number) or time (ISO, UTC);
            read-only.
    """

    def __init__(self, path: str | Path, create: bool = False, read_only: bool = False,
                 timeout_s: float = checker.TIMEOUT_S, as_of: str | None = None) -> None:
        if as_of is not None:
            self.store = Store.open(path, read_only=True, as_of=str(as_of))
        elif read_only:
            self.store = Store.open(path, read_only=True)
            if any(materialize.stale(self.store)):
                self.store.close()
                with Store.open(path) as rw:
                    rw.retrying(lambda: materialize.ensure_fresh(rw))
                    checker.refresh_metadata(rw)
                self.store = Store.open(path, read_only=True)
        else:
            self.store = Store.open(path, create=create)
        self.timeout_s = timeout_s

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ingest(self, path: str | Path, program: str | Path | None = None,
               options: dict[str, str] | None = None) -> IngestResult:
        """Ingest one artefact (see :func:`argusdb.ingest.ingest_path`)."""
        src = ProgramSource.from_path(program) if program else None
        return ingest_path(self.store, path, src, options)

    def check(self, sql: str) -> list[Finding]:
        """Findings of the compatibility checker for ``sql`` (empty when it may run)."""
        materialize.ensure_fresh(self.store)
        return checker.check(sql, self.store)

    def query(self, sql: str) -> pa.Table:
        """Check ``sql`` and run it read-only; raises QueryRefused with the findings if refused.

        Raises:
            QueryRefused: the checker refused it (``.findings`` says why and what to do).
            QueryFailed: DuckDB rejected it or it ran past the time limit.
        """
        materialize.ensure_fresh(self.store)
        return checker.execute(sql, self.store, self.timeout_s)

    def query_with_provenance(self, sql: str) -> tuple[pa.Table, dict[str, Any]]:
        """Like :meth:`query`, also returning :meth:`explain`'s provenance of the answer."""
        materialize.ensure_fresh(self.store)
        table, report = checker.execute_report(sql, self.store, self.timeout_s)
        return table, report.provenance()

    def explain(self, sql: str) -> dict[str, Any]:
        """The provenance an answer would rest on: program versions, runs, tasks, evidence
        classes, interference signatures, replay passes, scopes, constructs and
        acknowledgements; with the findings when it would be refused."""
        materialize.ensure_fresh(self.store)
        return checker.explain(sql, self.store)


def connect(path: str | Path, create: bool = False, read_only: bool = False,
            timeout_s: float = checker.TIMEOUT_S, as_of: str | None = None) -> Connection:
    """Open the store at ``path`` (a DuckDB file or a ``ducklake:`` URI; ``create=True`` makes
    it when missing; ``as_of`` a snapshot number or time opens it as it stood then)."""
    return Connection(path, create=create, read_only=read_only, timeout_s=timeout_s,
                      as_of=as_of)
