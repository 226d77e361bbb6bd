"""The evidence shape, read once from the annotations of ``argusdb/schema/``
(see :mod:`argusdb.schema.catalog`).

The DDL is the one home of these facts; this module only reads them:

- the scope coordinates: columns of ``observed_evidence`` annotated ``@scope`` (in table order;
  ``@scope: launches`` picks launches, ``@scope: in_kernel`` slices one launch);
- the routing of collector batches: a table annotated ``@batch: NAME`` receives the batches a
  reader yields as ``NAME`` (``@split: never``: its rows stay with the program's run when a
  trace's other kernels go to a timeline run);
- the key columns ingest fills, never the collector: ``@key: run`` (the run's value),
  ``@key: evidence_id`` (SQL macro ``evidence_id_of(run_seq, src_row)``), ``@key: region``
  (the kernel's region for kernel-wide rows, SQL macro ``kernel_wide``); and ``@fill: run``
  (the collector's value, else the run's);
- the Arrow schema of each batch: the table's other columns, typed as the DDL types them.

The formulas themselves are SQL macros of ``argusdb/queries/shape.sql``; :func:`keyed` evaluates
them over a batch before :meth:`argusdb.store.embedded.Store.append_batch` appends it.

Example:
    >>> SCOPE
    ('rank', 'launch', 'cta', 'sm', 'warp', 'warp_role', 'loop_iter')
    >>> routes()["evidence"]
    'observed_evidence'
    >>> batch_schema("instruction").names
    ['kernel', 'pc', 'sass', 'source_file', 'source_line']
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from argusdb.errors import ArgusError
from argusdb.schema import catalog

if TYPE_CHECKING:
    pass

#: Arrow type of each DDL type a collector batch may carry.
_ARROW = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(),
          "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}
#: The table whose scope columns are the scope coordinates.
_EVIDENCE = "observed_evidence"


@cache
def _tables() -> dict[str, catalog.SqlObject]:
    return {o.name: o for m in catalog.schema_modules() for o in m.objects if o.kind == "table"}


def _annotated(table: str, name: str) -> dict[str, str]:
    """Columns of ``table`` carrying annotation ``name``, with its value, in table order."""
    obj = _tables()[table]
    return {c: a[name] for c, a in obj.column_annotations.items() if name in a}


@cache
def routes() -> dict[str, str]:
    """Collector batch name → the table that receives it (``@batch``)."""
    return {o.annotations["batch"]: o.name for o in _tables().values()
            if "batch" in o.annotations}


def stays_with_program_run(batch_name: str) -> bool:
    """True for a batch whose rows never split off to a timeline run (``@split: never``)."""
    table = _tables().get(routes().get(batch_name, ""))
    return table is not None and table.annotations.get("split") == "never"


@cache
def key_columns(table: str) -> dict[str, str]:
    """Columns of ``table`` that ingest fills (``@key``), with their kind, in table order."""
    return _annotated(table, "key")


@cache
def batch_schema(name: str) -> pa.Schema:
    """Arrow schema of a collector batch: the routed table's columns less its ``@key`` ones.

    ``name`` is a batch name (``evidence``) or a table name.
    """
    obj = _tables()[routes().get(name, name)]
    keys = key_columns(obj.name)
    return pa.schema([(c, _ARROW[t]) for c, t in obj.column_types.items() if c not in keys])


@cache
def _scope(which: str | None = None) -> tuple[str, ...]:
    return tuple(c for c, v in _annotated(_EVIDENCE, "scope").items() if which in (None, v))


#: Scope coordinates of every evidence row, outermost first; ``'all'`` where one does not apply.
SCOPE = _scope()
#: Scope coordinates inside one kernel launch (they nest: a value at one of them is a slice).
INTRA_KERNEL_SCOPE = _scope("in_kernel")


def conform(name: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with exactly the columns of its schema (absent ones NULL), in table order.

    Raises:
        ArgusError: an unknown batch name, or columns the table does not declare.
    """
    if name not in routes():
        raise ArgusError(f"collector yielded rows for unknown table {name!r}")
    schema = batch_schema(name)
    unknown = [c for c in batch.schema.names if c not in schema.names]
    if unknown:
        raise ArgusError(f"collector yielded undeclared columns {unknown} for {routes()[name]}")
    n = batch.num_rows
    cols = [batch.column(f.name) if f.name in batch.schema.names else pa.nulls(n, f.type)
            for f in schema]
    return pa.RecordBatch.from_arrays(cols, names=schema.names)


def _constant(value: Any, n: int) -> pa.Array:
    """``n`` copies of one text value, in four bytes a row (a dictionary array)."""
    if value is None:
        return pa.nulls(n, pa.string())
    import pyarrow.compute as pc

    zeros = pc.fill_null(pa.nulls(n, pa.int32()), 0)
    return pa.DictionaryArray.from_arrays(zeros, pa.array([str(value)]))


#: Prefix of the columns :func:`marked` adds for :func:`key_select` (never stored).
_MARK = "_argus_"


def marked(name: str, batch: pa.RecordBatch, run: dict[str, Any],
           kernels: Sequence[str] = (), program: str | None = None) -> pa.RecordBatch:
    """The rows of collector batch ``name``, conformed, with what :func:`key_select` needs to
    key them for ``run``: the ``@key: run`` columns as run constants, and per row the run's
    ``run_seq`` (``_argus_run_seq``), its ``@fill: run`` values (``_argus_<column>``) and, for
    rows of ``kernels`` (the @triton.jit functions of ``program``), the program's name
    (``_argus_region``). Arrow only: the store evaluates the key formulas when it appends, one
    statement for the rows of many runs.
    """
    import pyarrow.compute as pc

    batch = conform(name, batch)
    table = routes()[name]
    n = batch.num_rows
    cols = {c: batch.column(c) for c in batch.schema.names}
    for col, kind in key_columns(table).items():
        if kind == "run":
            cols[col] = _constant(run[col], n)
        elif kind == "evidence_id":
            cols[_MARK + "run_seq"] = pa.array(np.full(n, run["run_seq"], np.int64))
        elif kind == "region" and program and kernels:
            mine = pc.fill_null(pc.is_in(cols["kernel"], pa.array(list(kernels), pa.string())),
                                False)
            idx = pa.array(np.zeros(n, np.int32), mask=~mine.to_numpy(zero_copy_only=False))
            cols[_MARK + "region"] = pa.DictionaryArray.from_arrays(idx, pa.array([program]))
        elif kind == "region":
            cols[col] = pa.nulls(n, pa.string())
        else:
            raise ArgusError(f"{table}.{col}: unknown @key kind {kind!r} in argusdb/schema/")
    for col in _annotated(table, "fill"):
        cols[_MARK + col] = _constant(run.get(col), n)
    return pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols))


def key_select(table: str, names: Sequence[str]) -> dict[str, str]:
    """Per column of ``table`` that a :func:`marked` batch with columns ``names`` gives, the
    library SQL expression over the batch: ``evidence_id_of(run_seq, src_row)`` (``@key:
    evidence_id``), ``<program>/<kernel>`` for the kernel-wide rows of the program's kernels
    (macro ``kernel_wide``, ``@key: region``), the collector's value else the run's for
    ``@fill: run`` columns (see ``argusdb/queries/shape.sql``), the column itself else."""
    keys = key_columns(table)
    fill = _annotated(table, "fill")
    have = set(names)
    out: dict[str, str] = {}
    for col in _tables()[table].column_types:
        if keys.get(col) == "evidence_id":
            out[col] = f"evidence_id_of({_MARK}run_seq, src_row)"
        elif keys.get(col) == "region" and _MARK + "region" in have:
            args = ", ".join(c if c in have else "NULL"
                             for c in ("pc", "source_line", "scope_path"))
            out[col] = (f"CASE WHEN kernel_wide({args}, kernel) THEN {_MARK}region || '/' || "
                        f"kernel END")
        elif col in fill:
            out[col] = f"coalesce(nullif({col}, 'all'), {_MARK}{col}::VARCHAR, 'all')"
        elif col in have:
            out[col] = f'"{col}"'
    return out
