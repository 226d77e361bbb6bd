"""The checker's one seam to the data: a :class:`Metadata` Protocol, and an in-memory fake.

The checker is a pure function of the query text, the catalog and a Metadata: it never opens
a connection, never writes, never runs the query. A Metadata answers which *metadata rows*
(program version, run, task, class, standing, signature, replay pass, signal, unit,
granularity, scope level, device) an evidence relation has under the query's own simple
predicates; the store's implementation (:mod:`argusdb.store_metadata`, beside the store) asks
DuckDB, :class:`MemoryMetadata` filters a list of rows in Python (rule cases run on both).

Metadata columns (``META_COLUMNS``):
    ``_scope``: which scope coordinates are not 'all', plus 'in_kernel_scope' / 'tool_scope'
    for a scope-tree node below its kernel / above kernels ('kernel' when none holds);
    ``_standing``: 'clean', or the run signature when the value is perturbed by it (a timing
    value from a run that is not ``timing_clean``; any value of an instrumented or forced-wait
    run); NULL for derived values;
    ``_granularity``: 'instruction' (a PC), 'line' (a source line), 'region' (an attributed
    region sum) or 'kernel' (a kernel-wide value);
    ``unit``: the value's unit ('(none)' where the artefact gives none); ``device``: the
    run's device model (NULL where the run does not say).

Which relations hold evidence, and in which columns, is data: ``relations.csv`` beside this
module declares every table and view users can read (a test fails on an undeclared one).

Example:
    >>> meta = MemoryMetadata({"evidence": [{"program_version": "a", "signal": "duration",
    ...                                       "_rows": 3}]})
    >>> meta.versions("evidence")
    {'a'}
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from argusdb.checker.predicates import NotSimple, Pred, evaluate

#: Metadata columns every metadata row carries (the properties the rules look at).
META_COLUMNS = ("program_version", "run_id", "task_id", "evidence_class", "_standing",
                "signature", "replay_pass", "signal", "_scope", "unit", "_granularity",
                "device")
#: Units of timing values (ours and the tools' own spellings).
TIMING_UNITS = ("ns", "us", "ms", "s", "nsecond", "usecond", "msecond", "second", "cycle",
                "cycles")
RELATIONS_CSV = Path(__file__).with_name("relations.csv")


@cache
def declared_relations() -> dict[str, tuple[str, ...]]:
    """Every readable relation with its evidence columns (empty: facts, not evidence)."""
    with RELATIONS_CSV.open(newline="") as fh:
        return {r["relation"]: tuple(r["evidence_columns"].split())
                for r in csv.DictReader(fh)}


def evidence_columns(name: str) -> tuple[str, ...]:
    """Evidence columns of relation ``name`` (empty for facts and unknown names)."""
    return declared_relations().get(name, ())


def evidence_relation(name: str) -> bool:
    """Whether rows of relation ``name`` are evidence values (checked by the rules)."""
    return bool(evidence_columns(name))


class Metadata(Protocol):
    """What the checker needs to know about the data (see the module docstring)."""

    def rows(self, relation: str, predicates: list[Pred], keys: list[Pred],
             columns: set[str] | None = None) -> list[dict[str, Any]]:
        """Distinct metadata rows of ``relation`` under ``predicates`` (each with ``_rows``,
        its row count), with the value of each of ``keys`` as ``_k<i>``."""

    def versions(self, relation: str) -> set[str]:
        """Program versions that have rows in ``relation``."""

    def columns(self, relation: str) -> set[str]:
        """Columns of ``relation`` as the data has them."""

    def values(self, select_sql: str) -> list[Any] | None:
        """Values of an uncorrelated one-column subquery of the query; None when unknown."""

    def program_versions(self) -> list[dict[str, Any]]:
        """Rows of ``program_version`` (program_version, program, options, transform)."""


class MemoryMetadata:
    """A :class:`Metadata` over rows held in memory (tests, and checks without a store).

    Predicates the small evaluator cannot decide, keys, and ``values()`` subqueries are
    evaluated by sqlglot's Python executor over the rows and ``tables`` given; a row it
    cannot decide either is kept (the fake may over-approximate, never hide a row).

    Args:
        rows: metadata rows per relation, each with every column predicates may read.
        tables: plain tables (``run``, ``program_version`` ...) for ``values()`` subqueries.
        versions: rows of ``program_version`` (default: ``tables['program_version']``).
    """

    def __init__(self, rows: dict[str, list[dict[str, Any]]],
                 tables: dict[str, list[dict[str, Any]]] | None = None,
                 versions: list[dict[str, Any]] | None = None) -> None:
        self._rows = rows
        self._tables = tables or {}
        self._versions = versions if versions is not None else \
            list(self._tables.get("program_version", []))
        self._engine: dict[tuple[str, str], list[Any] | None] = {}

    def _column(self, relation: str, sql: str) -> list[Any] | None:
        """``sql`` evaluated on every row of ``relation`` (sqlglot's executor), or None."""
        key = (relation, sql)
        if key not in self._engine:
            from sqlglot import executor

            try:
                res = executor.execute(f"SELECT {sql} AS v FROM m", dialect="duckdb",
                                       tables={"m": self._rows.get(relation, [])})
                self._engine[key] = [r[0] for r in res.rows]
            except Exception:
                self._engine[key] = None
        return self._engine[key]

    def rows(self, relation: str, predicates: list[Pred], keys: list[Pred],
             columns: set[str] | None = None) -> list[dict[str, Any]]:
        data = self._rows.get(relation, [])
        out: dict[tuple[Any, ...], dict[str, Any]] = {}
        for i, r in enumerate(data):
            keep = True
            for p in predicates:
                try:
                    v = evaluate(p, r)
                except (NotSimple, KeyError):
                    col = self._column(relation, p.sql())
                    v = True if col is None else col[i]
                if v is not True:
                    keep = False
                    break
            if not keep:
                continue
            ks: dict[str, Any] = {}
            for j, k in enumerate(keys):
                try:
                    ks[f"_k{j}"] = evaluate(k, r)
                except (NotSimple, KeyError):
                    col = self._column(relation, k.sql())
                    ks[f"_k{j}"] = None if col is None else col[i]
            d = {c: r.get(c) for c in META_COLUMNS} | ks
            hit = out.setdefault(tuple(map(repr, d.values())), {**d, "_rows": 0})
            hit["_rows"] += int(r.get("_rows") or 1)
        return list(out.values())

    def versions(self, relation: str) -> set[str]:
        return {r["program_version"] for r in self._rows.get(relation, [])
                if r.get("program_version") is not None}

    def columns(self, relation: str) -> set[str]:
        rows = self._rows.get(relation, [])
        return set(rows[0]) if rows else set()

    def values(self, select_sql: str) -> list[Any] | None:
        from sqlglot import executor

        try:
            res = executor.execute(select_sql, dialect="duckdb", tables=self._tables)
        except Exception:
            return None
        if res.rows and len(res.rows[0]) != 1:
            return None
        return [r[0] for r in res.rows]

    def program_versions(self) -> list[dict[str, Any]]:
        return list(self._versions)
