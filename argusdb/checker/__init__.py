"""The query checker: parse (sqlglot, DuckDB dialect), check, then execute read-only.

This first version only admits a single SELECT statement; the compatibility rules live in
``argusdb/checker/rules/`` (one rule per module) as they are added.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from argusdb.errors import Finding
from argusdb.store import Store


def check(sql: str, store: Store | None = None) -> list[Finding]:
    """Findings for ``sql``; an empty list means it may run."""
    try:
        stmts = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        return [Finding("AR00", "parse.error", f"cannot parse the query: "
                        f"{err.get('description', exc)}", "write one SELECT statement",
                        int(err.get("line") or 0), int(err.get("col") or 0))]
    if len(stmts) != 1 or not isinstance(stmts[0], exp.Query):
        return [Finding("AR09", "sandbox.read_only", "only one SELECT query is allowed",
                        "ask one read-only SELECT question over the evidence views")]
    return []


def execute(sql: str, store: Store) -> pa.Table:
    """Run a checked query."""
    return store.arrow(sql)


def explain(sql: str, store: Store) -> dict[str, Any]:
    """Provenance of the answer (filled by the checker's provenance pass)."""
    return {"sql": sql, "findings": [f.to_json() for f in check(sql, store)]}
