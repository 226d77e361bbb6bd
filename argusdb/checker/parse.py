"""The parser front: SQL text → one sqlglot expression (DuckDB dialect), or a finding.

The checker only ever reasons about the tree this returns, and the engine only ever runs the
SQL generated from that same tree (see :func:`argusdb.checker.execute`), so what was checked is
what runs. Positions come from sqlglot's token offsets (``meta['start']``).

Example:
    >>> tree, findings = parse("SELECT 1")
    >>> findings
    []
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from argusdb.errors import Finding

#: sqlglot warns on stderr when it falls back to a generic Command; we report that ourselves.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

#: Longest query text the checker reads; agents send short questions, not megabytes.
MAX_SQL_CHARS = 100_000


@dataclass
class Parsed:
    """The query text and its statements as sqlglot parsed them."""

    sql: str
    statements: list[Any]


def parse(sql: str) -> tuple[Parsed | None, list[Finding]]:
    """Parse ``sql`` with sqlglot (DuckDB dialect); never raises on bad input."""
    if not isinstance(sql, str) or not sql.strip():
        return None, [Finding("AR00", "parse.error", "the query is empty",
                              "write one SELECT statement over the evidence views, e.g. "
                              "SELECT signal, count(*) FROM evidence GROUP BY signal")]
    if len(sql) > MAX_SQL_CHARS:
        return None, [Finding("AR00", "parse.error",
                              f"the query is {len(sql)} characters long (limit {MAX_SQL_CHARS})",
                              "ask a shorter question; use CTEs instead of generated text")]
    try:
        stmts = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.ParseError as exc:
        word = _first_word(sql)
        if word in WRITE_STATEMENTS:
            # sqlglot cannot parse some DuckDB statements (EXPORT/IMPORT DATABASE): still a
            # sandbox refusal, not a syntax error
            return None, [Finding("AR08", "sandbox.statement",
                                  f"{word} is not allowed: queries are read-only",
                                  "ask a SELECT question over the evidence views; the store is "
                                  "written only by argus ingest/observe", 1, 1,
                                  {"statement": word})]
        err = exc.errors[0] if exc.errors else {}
        desc = str(err.get("description") or exc).splitlines()[0]
        hl = err.get("highlight")
        near = f" near {hl!r}" if hl else ""
        return None, [Finding("AR00", "parse.error", f"cannot parse the query: {desc}{near}",
                              "write one SELECT statement in DuckDB SQL",
                              int(err.get("line") or 0), _start_col(err))]
    except (sqlglot.errors.SqlglotError, RecursionError, ValueError, TypeError,
            IndexError, KeyError, AttributeError) as exc:
        # sqlglot raises TokenError on unterminated strings and may recurse deeply on
        # pathological nesting: both are bad input, never a crash.
        return None, [Finding("AR00", "parse.error",
                              f"cannot parse the query: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": "),
                              "write one SELECT statement in DuckDB SQL")]
    if not stmts:
        return None, [Finding("AR00", "parse.error", "the query has no statement",
                              "write one SELECT statement")]
    empty = next((s for s in stmts for q in s.find_all(exp.Select) if not q.expressions), None)
    if empty is not None:
        return None, [Finding("AR00", "parse.error", "a SELECT has no columns",
                              "name what to select, e.g. SELECT signal, count(*) FROM evidence "
                              "GROUP BY signal")]
    return Parsed(sql, stmts), []


#: Leading keywords of statements that write, configure or leave the store.
WRITE_STATEMENTS = frozenset({
    "EXPORT", "IMPORT", "COPY", "ATTACH", "DETACH", "INSTALL", "LOAD", "PRAGMA", "SET", "RESET",
    "CALL", "CREATE", "DROP", "ALTER", "INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE",
    "VACUUM", "CHECKPOINT", "FORCE", "USE", "BEGIN", "COMMIT", "ROLLBACK", "GRANT", "COMMENT",
})


def _first_word(sql: str) -> str:
    text = re.sub(r"(--[^\n]*|/\*.*?\*/)", " ", sql, flags=re.S).lstrip(" \t\r\n(;")
    m = re.match(r"[A-Za-z]+", text)
    return m.group(0).upper() if m else ""


def _start_col(err: dict[str, object]) -> int:
    # sqlglot reports the column where the offending token ends; point at its start.
    col = int(str(err.get("col") or 0))
    hl = str(err.get("highlight") or "")
    return max(1, col - len(hl) + 1) if col else 0


def position(sql: str, node: exp.Expression | None) -> tuple[int, int]:
    """1-based (line, column) of ``node`` in ``sql`` from token offsets; (0, 0) if unknown."""
    if node is None:
        return 0, 0
    start = _start(node)
    if start is None:
        return 0, 0
    line = sql.count("\n", 0, start) + 1
    col = start - (sql.rfind("\n", 0, start) + 1) + 1
    return line, col


def _start(node: exp.Expression) -> int | None:
    best: int | None = None
    for n in node.walk():
        s = n.meta.get("start") if n.meta else None
        if isinstance(s, int) and (best is None or s < best):
            best = s
    return best
