"""The store: one embedded DuckDB file. The only module that imports duckdb.

Each run lands in one transaction: its rows become visible whole or not at all, also when the
process is killed half-way (DuckDB only makes a transaction durable at COMMIT). Views of
``queries/`` are (re)created when a store is opened so code and store never disagree.

Example:
    >>> with Store.open("argus.duckdb", create=True) as st:
    ...     st.sql("SELECT count(*) FROM evidence").fetchall()
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from argusdb import catalog
from argusdb.errors import ArgusError, StoreError

#: Key columns the store adds to collector batches, per table.
_KEYED = {
    "observed_evidence": ("evidence_id", "program_version", "task_id", "run_id", "region_id"),
    "kernel_launch": ("run_id", "region_id"),
    "instruction": ("run_id",),
    "inline_site": ("run_id",),
}


class Store:
    """An argusdb store (DuckDB file)."""

    def __init__(self, path: str, con: duckdb.DuckDBPyConnection,
                 read_only: bool = False) -> None:
        self.path = path
        self.con = con
        self.read_only = read_only
        self._lock = threading.Lock()

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, create: bool = False, read_only: bool = False) -> Store:
        """Open a store; with ``create`` make it (and its tables) when missing.

        Raises:
            StoreError: the file is missing (without ``create``), locked, or not a store.
        """
        p = Path(path)
        if not create and not p.exists():
            raise StoreError(f"{path}: no such store. Create it with 'argus init {path}'.")
        if p.exists() and p.is_dir():
            raise StoreError(f"{path}: is a directory. Name a store file, e.g. {p}/argus.duckdb.")
        try:
            con = duckdb.connect(str(p), read_only=read_only)
        except duckdb.Error as exc:
            raise StoreError(f"{path}: cannot open as a DuckDB store ({exc}). Check that no other "
                             "process writes it and that it is an argusdb store.") from exc
        st = cls(str(p), con, read_only)
        if not read_only:
            st.ensure_schema()
        elif not st.has_table("run"):
            raise StoreError(f"{path}: not an argusdb store (no 'run' table). "
                             f"Create one with 'argus init'.")
        return st

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has_table(self, name: str) -> bool:
        row = self.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                               [name]).fetchone()
        return bool(row and row[0])

    def ensure_schema(self) -> None:
        """Create missing tables, (re)create views and macros, and copy the docs in."""
        try:
            self.con.execute("BEGIN")
            for mod in catalog.schema_modules():
                self.con.execute(mod.text)
            self.con.execute("CREATE SEQUENCE IF NOT EXISTS run_seq_gen START 1")
            for mod in catalog.query_modules():
                self.con.execute(mod.text)
            for stmt in catalog.comment_statements():
                self.con.execute(stmt)
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            self.con.execute("ROLLBACK")
            raise StoreError(f"{self.path}: cannot create the argusdb schema ({exc}).") from exc

    # -- reading ---------------------------------------------------------------------------
    def sql(self, query: str, params: Sequence[Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run trusted SQL (library code only; user queries go through the checker)."""
        return self.con.execute(query, params or [])

    def arrow(self, query: str, params: Sequence[Any] | None = None) -> pa.Table:
        return self.con.execute(query, params or []).to_arrow_table()

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(query, params or [])
        names = [d[0] for d in cur.description or []]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def run_exists(self, run_id: str) -> bool:
        row = self.con.execute("SELECT count(*) FROM run WHERE run_id = ?", [run_id]).fetchone()
        return bool(row and row[0])

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; rolled back on any exception (including KeyboardInterrupt)."""
        with self._lock:
            self.con.execute("BEGIN")
            try:
                yield self.con
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")

    def next_run_seq(self) -> int:
        row = self.con.execute("SELECT nextval('run_seq_gen')").fetchone()
        assert row is not None
        return int(row[0])

    def insert_row(self, table: str, row: dict[str, Any]) -> None:
        """Insert one row given as a dict; dicts and lists are stored as JSON."""
        cols = list(row)
        vals = [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                for v in row.values()]
        self.con.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES "
                         f"({', '.join('?' for _ in cols)})", vals)

    def append_batch(self, table: str, batch: pa.RecordBatch, keys: dict[str, Any],
                     kernels: Sequence[str] = (), program: str | None = None) -> int:
        """Append one collector batch to ``table`` with the store's key columns.

        ``region_id`` is set for kernel-wide rows of kernels in ``kernels`` (the @triton.jit
        functions of the program) to ``<program>/<kernel>``; per-PC, per-line and in-kernel
        scope rows (``scope_path`` below the kernel) stay NULL.
        """
        if table not in _KEYED:
            raise ArgusError(f"collector yielded rows for unknown table {table!r}")
        declared = catalog.all_objects()[table].columns
        own = [c for c in batch.schema.names if c in declared and c not in _KEYED[table]]
        unknown = [c for c in batch.schema.names if c not in declared]
        if unknown:
            raise ArgusError(f"collector yielded undeclared columns {unknown} for {table}")
        select: list[str] = []
        params: list[Any] = []
        for k in _KEYED[table]:
            if k == "evidence_id":
                select.append("?::BIGINT * 4294967296 + src_row")
                params.append(keys["run_seq"])
            elif k == "region_id":
                if program and kernels:
                    # Kernel-wide: no PC, no line, and no scope inside the kernel (a scope
                    # path, when there is one, ends at the kernel: 'it0/k', not 'k2/load').
                    scoped = "scope_path" in batch.schema.names
                    wide = ("pc IS NULL AND source_line IS NULL AND " + (
                        "(scope_path IS NULL OR scope_path = kernel OR "
                        "ends_with(scope_path, '/' || kernel)) AND " if scoped else "")
                            ) if table != "kernel_launch" else ""
                    select.append(f"CASE WHEN {wide}list_contains(?::VARCHAR[], kernel) "
                                  f"THEN ? || '/' || kernel END")
                    params.extend([list(kernels), program])
                else:
                    select.append("NULL")
            else:
                select.append("?")
                params.append(keys[k])
        select.extend(f'"{c}"' for c in own)
        cols = ", ".join([*_KEYED[table], *own])
        self.con.register("_argus_batch", batch)
        try:
            self.con.execute(f"INSERT INTO {table} ({cols}) SELECT {', '.join(select)} "
                             f"FROM _argus_batch", params)
        finally:
            self.con.unregister("_argus_batch")
        return batch.num_rows
