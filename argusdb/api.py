"""The Python API: ``argusdb.connect(path)``.

Example:
    >>> db = argusdb.connect("argus.duckdb")
    >>> db.query("SELECT signal, count(*) FROM evidence GROUP BY signal")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb import checker, materialize
from argusdb.errors import Finding, QueryRefused
from argusdb.ingest import IngestResult, ingest_path
from argusdb.regions import ProgramSource
from argusdb.store import Store


class Connection:
    """A connection to one store; user SQL is checked before it runs."""

    def __init__(self, path: str | Path, create: bool = False) -> None:
        self.store = Store.open(path, create=create)

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
        return checker.check(sql, self.store)

    def query(self, sql: str) -> pa.Table:
        """Check ``sql`` and run it; raises QueryRefused with the findings when refused."""
        findings = self.check(sql)
        if findings:
            raise QueryRefused(findings)
        materialize.ensure_fresh(self.store)
        return checker.execute(sql, self.store)

    def explain(self, sql: str) -> dict[str, Any]:
        """The provenance an answer would rest on: versions, runs, tasks, classes, signatures."""
        materialize.ensure_fresh(self.store)
        return checker.explain(sql, self.store)


def connect(path: str | Path, create: bool = False) -> Connection:
    """Open the store at ``path`` (``create=True`` makes it when missing)."""
    return Connection(path, create=create)
