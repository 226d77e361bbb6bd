"""The checker's one seam to the data: a :class:`Metadata` Protocol, and an in-memory fake.

The checker is a pure function of the query text, the catalog and a Metadata: it never opens
a connection, never writes, never runs the query. A Metadata answers which *metadata rows*
(program version, run, task, class, standing, signature, replay pass, signal, unit,
granularity, scope level, device) an evidence relation has under the query's own simple
predicates; the store's implementation (:mod:`argusdb.api.metadata`, beside the store) asks
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
    run's device model (NULL where the run does not say);
    ``_clock``: the clock domain of the row's raw timestamps (``interval_event.clock_domain``:
    one process and clock; NULL for rows without timestamps); ``_aligned_clock``: that of its
    aligned timestamps (``interval_event.aligned_domain``);
    ``_sampler``: for sample counts (unit ``samples``), the collector whose sampler counted
    them (``ncu``: Nsight Compute's warp-state samples; ``proton``: CUPTI PC sampling through
    Proton); NULL for every other value. Two samplers' counts of one stall reason
    (``stall_barrier``) are different measurements (other intervals, other runs).

A metadata row is grouped to what the rules compare (``RULE_COLUMNS`` and the query's keys),
not per run: its runs and tasks come as aggregates. ``_runs`` (``_tasks``) lists a sample of
its run (task) ids, sorted: the distinct ones among its ``ID_SAMPLE`` smallest values, and its
largest; ``_runs_complete`` (``_tasks_complete``) says whether that is every one. The one rule
that counts runs (a standing conflict is between two runs) only asks whether there are two,
which the smallest and the largest id decide exactly; provenance lists the samples. A query
that keys or filters by ``run_id`` still sees one group per run (the key is part of the row).

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
import heapq
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from argusdb.checker.predicates import Pred

#: Metadata columns every metadata row carries (the properties the rules look at).
META_COLUMNS = ("program_version", "run_id", "task_id", "evidence_class", "_standing",
                "signature", "replay_pass", "signal", "_scope", "unit", "_granularity",
                "device", "_clock", "_aligned_clock", "_sampler")
#: The metadata columns a row is grouped by: all but the run and task (kept as aggregates).
RULE_COLUMNS = tuple(c for c in META_COLUMNS if c not in ("run_id", "task_id"))
#: Smallest run (task) ids a metadata row's sample is drawn from (see the module docstring).
ID_SAMPLE = 32
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


def group_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-run metadata rows (``run_id``, ``task_id``, ``_rows`` and the rest) grouped to
    everything else, in order of first appearance, with the run and task samples of the module
    docstring: what the store computes in SQL (``min(run_id, ID_SAMPLE)``, ``max(run_id)``),
    done in Python.

    Example:
        >>> [(r["_runs"], r["_runs_complete"], r["_rows"]) for r in group_rows(
        ...     [{"signal": "a", "run_id": "r2", "task_id": "t", "_rows": 2},
        ...      {"signal": "a", "run_id": "r1", "task_id": "t", "_rows": 3}])]
        [(['r1', 'r2'], True, 5)]
    """
    out: dict[Any, dict[str, Any]] = {}
    ids: dict[Any, tuple[list[Any], list[Any]]] = {}
    for r in rows:
        rest = [(c, v) for c, v in r.items() if c not in ("run_id", "task_id", "_rows")]
        try:
            key: Any = tuple(rest)
            hit = out.get(key)
        except TypeError:  # an unhashable key value (a list): compare its text
            key = repr(rest)
            hit = out.get(key)
        if hit is None:
            hit = out[key] = {**dict(rest), "_rows": 0}
            ids[key] = ([], [])
        hit["_rows"] += int(r.get("_rows") or 0)
        runs, tasks = ids[key]
        if r.get("run_id") is not None:
            runs.append(r["run_id"])
        if r.get("task_id") is not None:
            tasks.append(r["task_id"])
    for key, hit in out.items():
        for name, values in zip(("runs", "tasks"), ids[key], strict=True):
            hit[f"_{name}"], hit[f"_{name}_complete"] = id_sample(values)
    return list(out.values())


def id_sample(values: list[Any]) -> tuple[list[Any], bool]:
    """The sample of ``values`` (one per metadata row, repeats kept) and whether it is all of
    them: the distinct ones among the ``ID_SAMPLE`` smallest, and the largest."""
    if not values:
        return [], True
    small = heapq.nsmallest(ID_SAMPLE, values)
    top = max(values)
    return sorted({*small, top}), top in small


class Metadata(Protocol):
    """What the checker needs to know about the data (see the module docstring)."""

    def rows(self, relation: str, predicates: list[Pred], keys: list[Pred],
             columns: set[str] | None = None) -> list[dict[str, Any]]:
        """Metadata rows of ``relation`` under ``predicates``, one per distinct value of
        ``RULE_COLUMNS`` and ``keys`` (each key's value as ``_k<i>``), with ``_rows`` (its
        row count) and the run and task samples (module docstring)."""

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
        from argusdb.checker.predicates import NotSimple, evaluate

        data = self._rows.get(relation, [])
        out: list[dict[str, Any]] = []
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
            out.append({c: r.get(c) for c in META_COLUMNS} | ks
                       | {"_rows": int(r.get("_rows") or 1)})
        return group_rows(out)

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
