"""How the store writes rows: one row, many rows, and Arrow batches appended on DuckDB's
appender, with the table's defaults filled in (a mixin of :class:`argusdb.store.embedded.Store`:
the connection, its write generation and the runs of the open transaction are the store's)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:  # an annotation only: opening a store for a question loads no Arrow
    import pyarrow as pa


class RowWriter:
    """Row and batch writes of a store (see :class:`argusdb.store.embedded.Store`)."""

    con: duckdb.DuckDBPyConnection
    generation: int
    append_threads: int
    _locked: bool
    _new_runs: list[str]
    _appended: bool
    _table_columns: dict[str, list[tuple[str, str | None]]]
    _keyed: set[str] | None

    def insert_row(self, table: str, row: dict[str, Any]) -> None:
        """Insert one row given as a dict; dicts and lists are stored as JSON."""
        self.generation += 1
        if table == "run":
            self._new_runs.append(str(row["run_id"]))
        cols = list(row)
        vals = [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                for v in row.values()]
        self.con.execute(f"INSERT {self._or_ignore(table)}INTO {table} ({', '.join(cols)}) "
                         f"VALUES ({', '.join('?' for _ in cols)})", vals)

    def _or_ignore(self, table: str) -> str:
        """'OR IGNORE ' for a table with a key (a row already there stays), else '' (DuckDB
        refuses OR IGNORE without one; such a table, e.g. observed_evidence, takes every row)."""
        keyed = self._keyed
        if keyed is None:
            keyed = self._keyed = {str(t) for (t,) in self.con.execute(
                "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE constraint_type "
                "IN ('PRIMARY KEY', 'UNIQUE')").fetchall()}
        return "OR IGNORE " if table in keyed else ""

    def insert_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """:meth:`insert_row` for many rows: one statement per set of columns."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(row), []).append(row)
        for cols, group in groups.items():
            self.generation += 1
            if table == "run":
                self._new_runs.extend(str(r["run_id"]) for r in group)
            one = f"({', '.join('?' for _ in cols)})"
            self.con.execute(
                f"INSERT {self._or_ignore(table)}INTO {table} ({', '.join(cols)}) VALUES "
                f"{', '.join(one for _ in group)}",
                [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                 for r in group for v in r.values()])

    def append_batch(self, table: str, batch: pa.RecordBatch | pa.Table,
                     columns: dict[str, str] | None = None) -> int:
        """Append ``batch`` to ``table``: each table column from ``columns`` (its library SQL
        expression over the batch: ingest's key formulas, :func:`argusdb.schema.shape.key_select`),
        else the batch's column of that name, else its default (NULL). Returns the rows
        appended.

        The batch is read as a relation, which DuckDB lets go once the statement ends
        (``register()`` keeps every batch until COMMIT, a run's whole file, ~2 KB per nsys
        launch; a locked-down instance has no replacement scans): memory stays bounded by the
        batch within a long transaction.
        """
        if batch.num_rows:
            self._appended = True
            have, exprs = set(batch.schema.names), columns or {}
            proj = ", ".join(exprs[c] if c in exprs else f'"{c}"' if c in have else
                             (default or "NULL") for c, default in self._column_defaults(table))
            with self._append_threads():
                self.con.from_arrow(batch).project(proj).insert_into(table)
            self.generation += 1
        return batch.num_rows

    def _column_defaults(self, table: str) -> list[tuple[str, str | None]]:
        """``table``'s columns in order, each with its default expression (None: none)."""
        cols = self._table_columns.get(table)
        if cols is None:
            cols = self._table_columns[table] = [
                (str(c), None if d is None else str(d)) for c, d in self.con.execute(
                    "SELECT column_name, column_default FROM duckdb_columns() "
                    "WHERE database_name = current_database() AND schema_name = "
                    "current_schema() AND table_name = ? "
                    "ORDER BY column_index", [table]).fetchall()]
        return cols

    @contextmanager
    def inputs_held(self) -> Iterator[None]:
        """Within it, the materializations read the tables they do not write as they stand at
        its start (:func:`argusdb.store.materialize.refresh`). Here: as they lie; a shared store
        holds its small ones in memory (:meth:`argusdb.store.shared.SharedStore.inputs_held`)."""
        yield

    @contextmanager
    def _append_threads(self) -> Iterator[None]:
        """Run DuckDB on :attr:`append_threads` threads (one unless an ingest raised it) for
        an append of Arrow rows, then as before: with Python parsing beside it, its parallel
        insert (each thread compressing its own row groups, then merged) cost about twice the
        CPU and wall time of a serial one for the same rows (``bench/bench_ingest_many.py``
        times both for the raw append). A locked-down instance keeps its setting (``argus
        ingest`` locks it with the threads it chose, see :attr:`threads`)."""
        if self._locked:
            yield
            return
        row = self.con.execute("SELECT current_setting('threads')").fetchone()
        threads = int(row[0]) if row else 1
        if threads == self.append_threads:
            yield
            return
        self.con.execute(f"SET threads = {int(self.append_threads)}")
        try:
            yield
        finally:
            self.con.execute(f"SET threads = {threads}")
