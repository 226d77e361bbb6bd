"""Shared pieces of the readers of distributed traces: collective names, sizes, steps, batches.

Used by ``argusdb/collectors/kineto`` (NCCL kernel events, gloo annotations) and
``argusdb/collectors/torchdist`` (the argusdb spans recorder). Rows follow ``collective`` and
``trace_span`` of ``argusdb/schema/60_distributed.sql``; evidence rows are ``collective_duration``
(ns), ``collective_bytes`` (bytes) per instance (kernel = op, launch = seq) and ``step_time`` (ns)
per step (launch = step index).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from argusdb.collectors.base import (
    COLLECTIVE_SCHEMA,
    TRACE_SPAN_SCHEMA,
    evidence_batch,
    table_batch,
)

#: Source names of collectives → normalized op (nccl-tests' names).
_OPS = {
    "allreduce": "allreduce", "all_reduce": "allreduce", "allreduce_coalesced": "allreduce",
    "_allgather_base": "allgather", "allgather": "allgather", "all_gather": "allgather",
    "all_gather_into_tensor": "allgather", "allgather_into_tensor_coalesced": "allgather",
    "_reduce_scatter_base": "reducescatter", "reduce_scatter": "reducescatter",
    "reducescatter": "reducescatter", "reduce_scatter_tensor": "reducescatter",
    "broadcast": "broadcast", "reduce": "reduce", "all_to_all": "alltoall",
    "alltoall": "alltoall", "alltoall_base": "alltoall", "all_to_all_single": "alltoall",
    "barrier": "barrier", "send": "send", "recv": "recv", "gather": "gather",
    "scatter": "scatter",
}
#: Element sizes of the dtype names torch and Kineto write.
_ELEM_BYTES = {"float": 4, "float32": 4, "c10::float": 4, "double": 8, "float64": 8,
               "bfloat16": 2, "c10::bfloat16": 2, "half": 2, "float16": 2, "c10::half": 2,
               "int": 4, "int32": 4, "long int": 8, "int64": 8, "long": 8, "byte": 1,
               "unsigned char": 1, "uint8": 1, "char": 1, "int8": 1, "bool": 1,
               "float8_e4m3fn": 1, "float8_e5m2": 1}
#: Hidden column of gathered collectives: the float of ``bytes`` as the source gave it.
_BYTES_VALUE = "_bytes_value"
_NCCL_KERNEL = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)")


def normalize_op(name: str) -> str:
    """A source's collective name, normalized: ``'_allgather_base'``, ``'gloo:all_gather'``,
    ``'c10d::allgather_'`` → ``'allgather'``."""
    n = name.strip().lower()
    n = n[len("c10d::"):] if n.startswith("c10d::") else n.split(":", 1)[-1]
    return _OPS.get(n, _OPS.get(n.rstrip("_"), n))


def nccl_kernel_op(kernel: str) -> str | None:
    """The op of an NCCL kernel name (``ncclDevKernel_AllReduce_Sum_bf16_RING_LL`` → allreduce)."""
    m = _NCCL_KERNEL.match(kernel)
    return normalize_op(m.group(1)) if m else None


def elem_bytes(dtype: str | None) -> int | None:
    """Bytes per element of a dtype name as torch or Kineto write it; None when unknown."""
    return None if dtype is None else _ELEM_BYTES.get(dtype.strip().lower())


def message_bytes(in_n: int | None, out_n: int | None, eb: int | None) -> int | None:
    """nccl-tests' message size: the larger of the in and out messages, in bytes."""
    if eb is None or (in_n is None and out_n is None):
        return None
    return max(in_n or 0, out_n or 0) * eb


#: Rows gathered as Python values before they become one Arrow chunk of a :class:`Gathered`.
CHUNK_ROWS = 16_384


class Gathered:
    """Rows of one table in arrival order, held column-wise in Arrow.

    Every ``CHUNK_ROWS`` rows are converted by :func:`table_batch`, as one row list of the whole
    table would be (so each stored value is the one the row gave), and string columns are
    dictionary-encoded: a ``trace_span`` row takes ~50 bytes of Arrow memory (three 8-byte
    times, a 4-byte step, five 4-byte string codes; ~10 more of Python objects), where a
    Python dict took ~1 KB (measured on the replicated Kineto trace of
    ``bench/synth_kineto.py``; ``tests/collectors/test_comms_rows.py``). ``rank`` and
    ``src_row`` are left out (the writer adds them).

    Example:
        >>> g = Gathered(pa.schema([("name", pa.string()), ("start_ns", pa.int64())]))
        >>> g.append({"name": "aten::mm", "start_ns": 5}); len(g)
        1
    """

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = pa.schema([f for f in schema if f.name not in ("rank", "src_row")])
        self._cols: dict[str, list[Any]] = {f.name: [] for f in self.schema}
        self._chunks: list[pa.RecordBatch] = []
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, row: dict[str, Any]) -> None:
        """One row; columns it lacks are NULL."""
        for name, col in self._cols.items():
            col.append(row.get(name))
        self._n += 1
        if len(self._cols[self.schema.names[0]]) >= CHUNK_ROWS:
            self._seal()

    def _seal(self) -> None:
        batch = table_batch(self.schema, self._cols)
        self._chunks.append(pa.RecordBatch.from_arrays(
            [pc.dictionary_encode(c) if pa.types.is_string(c.type) else c
             for c in batch.columns], names=self.schema.names))
        for col in self._cols.values():
            col.clear()

    def table(self) -> pa.Table:
        """All rows, in arrival order; string columns share one dictionary each."""
        if self._cols[self.schema.names[0]] or not self._chunks:
            self._seal()
        table = pa.Table.from_batches(self._chunks).unify_dictionaries()
        self._chunks = table.to_batches()  # the remapped codes only, not both
        return table


class _Sorted:
    """A :class:`Gathered` table in (start, end) order (stable, as Python's sort), read as
    NumPy columns; ``seq`` and ``step`` as arrays that numbering may fill in."""

    def __init__(self, rows: Gathered) -> None:
        self.schema = rows.schema
        self.table = rows.table()
        self.order = pc.sort_indices(self.table, sort_keys=[
            ("start_ns", "ascending"), ("end_ns", "ascending")]).to_numpy()
        self.filled = {k: self.ints(k) for k in ("seq", "step") if k in self.schema.names}

    def __len__(self) -> int:
        return len(self.order)

    def ints(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """An integer column in order: values (0 where NULL) and whether each is present."""
        col = self.table.column(name).combine_chunks()
        return (col.fill_null(0).to_numpy()[self.order].astype(np.int64),
                col.is_valid().to_numpy(zero_copy_only=False)[self.order])

    def codes(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """A string column in order: codes into its distinct values (NULL is the last)."""
        col = self.table.column(name).combine_chunks()
        values = col.dictionary.to_pylist()
        codes = col.indices.fill_null(len(values)).to_numpy()[self.order]
        return codes, [*values, None]

    def values(self, name: str) -> list[Any]:
        """A column in order, as Python values (for the few rows evidence is written of)."""
        if name in self.filled:
            v, ok = self.filled[name]
            return [int(x) if o else None for x, o in zip(v.tolist(), ok.tolist(), strict=True)]
        if pa.types.is_dictionary(self.table.schema.field(name).type):
            codes, values = self.codes(name)
            return [values[c] for c in codes.tolist()]
        return self.table.column(name).take(pa.array(self.order)).to_pylist()

    def batch(self, lo: int, hi: int, rank: int | None, schema: pa.Schema) -> pa.RecordBatch:
        """Rows ``lo:hi`` of the order as a batch of ``schema``; src_row is the position."""
        part = self.table.take(pa.array(self.order[lo:hi]))
        cols = []
        for f in schema:
            if f.name == "rank":
                cols.append(pa.array([rank] * (hi - lo), type=f.type))
            elif f.name == "src_row":
                cols.append(pa.array(np.arange(lo, hi, dtype=np.int64)))
            elif f.name in self.filled:
                v, ok = self.filled[f.name]
                cols.append(pa.array(v[lo:hi], mask=~ok[lo:hi], type=f.type))
            else:
                cols.append(part.column(f.name).combine_chunks().cast(f.type))
        return pa.RecordBatch.from_arrays(cols, schema=schema)


class DistRows:
    """Collectives and spans of one rank, gathered in any order and written sorted by start.

    Rows are held column-wise (:class:`Gathered`), so a trace's million host ops take tens of
    megabytes, not gigabytes; :meth:`number` sorts and numbers them with NumPy.
    """

    def __init__(self, rank: int | None) -> None:
        self.rank = rank
        self.collectives = Gathered(COLLECTIVE_SCHEMA.append(pa.field(_BYTES_VALUE,
                                                                      pa.float64())))
        self.spans = Gathered(TRACE_SPAN_SCHEMA)
        self._sorted: tuple[_Sorted, _Sorted] | None = None

    def add_collective(self, **row: Any) -> None:
        row["dur_ns"] = row["end_ns"] - row["start_ns"]
        # the evidence value is the float of the size as given (the column holds it as int64)
        row[_BYTES_VALUE] = None if row.get("bytes") is None else float(row["bytes"])
        self.collectives.append(row)

    def add_span(self, **row: Any) -> None:
        row["dur_ns"] = row["end_ns"] - row["start_ns"]
        self.spans.append(row)

    def _assign_steps(self, coll: _Sorted, spans: _Sorted) -> None:
        """Give rows without a step the step (of the same clock) their start falls in: steps
        are numbered per clock in start order (repeats of one interval share the first's)."""
        kind, kinds = spans.codes("kind")
        is_step = kind == kinds.index("step") if "step" in kinds else np.zeros(len(kind), bool)
        clock, clocks = spans.codes("clock")
        start, _ = spans.ints("start_ns")
        end, _ = spans.ints("end_ns")
        step, has = spans.filled["step"]
        by_clock: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        for code in np.unique(clock[is_step]).tolist():
            rows = np.nonzero(is_step & (clock == code))[0]
            a, b = start[rows], end[rows]
            new = np.ones(len(rows), bool)
            new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
            first = np.maximum.accumulate(np.where(new, np.arange(len(rows)), 0))
            todo = ~has[rows]
            step[rows[todo]], has[rows[todo]] = first[todo], True
            by_clock[clocks[code]] = (a, b)
        # device-side rows may fall in a device step; host-clock steps serve host rows only
        for tbl in (coll, spans):
            if not len(tbl):
                continue
            t_clock, t_clocks = tbl.codes("clock")
            t_start, _ = tbl.ints("start_ns")
            t_step, t_has = tbl.filled["step"]
            for code, value in enumerate(t_clocks):
                if value not in by_clock:
                    continue
                a, b = by_clock[value]
                rows = np.nonzero((t_clock == code) & ~t_has)[0]
                j = np.searchsorted(a, t_start[rows], side="right") - 1
                inside = (j >= 0) & (t_start[rows] < b[np.maximum(j, 0)])
                t_step[rows[inside]], t_has[rows[inside]] = j[inside], True

    def number(self, seq_given: bool) -> None:
        """Sort by start; number each group's collectives in order unless the source did."""
        coll, spans = _Sorted(self.collectives), _Sorted(self.spans)
        if not seq_given and len(coll):
            pg, _ = coll.codes("pg")
            by_pg = np.argsort(pg, kind="stable")
            new = np.ones(len(pg), bool)
            new[1:] = pg[by_pg][1:] != pg[by_pg][:-1]
            pos = np.arange(len(pg))
            seq = np.empty(len(pg), np.int64)
            seq[by_pg] = pos - np.maximum.accumulate(np.where(new, pos, 0))
            coll.filled["seq"] = (seq, np.ones(len(pg), bool))
        self._assign_steps(coll, spans)
        self._sorted = coll, spans

    def batches(self, first_ordinal: int,
                batch_rows: int = 50_000) -> Iterator[tuple[str, pa.RecordBatch]]:
        """``collective``, ``trace_span`` and ``evidence`` batches of at most ``batch_rows``
        rows; evidence src_row from ``first_ordinal`` on (after the reader's other rows)."""
        if self._sorted is None:
            raise RuntimeError("DistRows.number() comes before batches()")
        coll, spans = self._sorted
        for table, schema, rows in (("collective", COLLECTIVE_SCHEMA, coll),
                                    ("trace_span", TRACE_SPAN_SCHEMA, spans)):
            # collective.rank is NOT NULL: a single-process trace is rank 0
            rank = self.rank if self.rank is not None or table == "trace_span" else 0
            for lo in range(0, len(rows), batch_rows):
                yield table, rows.batch(lo, min(lo + batch_rows, len(rows)), rank, schema)
        ev: dict[str, list[Any]] = {k: [] for k in ("kernel", "launch", "signal", "value", "unit",
                                                    "src_row")}
        n_ev = 0

        def value(kernel: str | None, launch: Any, signal: str, v: float, unit: str) -> None:
            nonlocal n_ev
            for k, x in (("kernel", kernel), ("launch", str(launch)), ("signal", signal),
                         ("value", v), ("unit", unit), ("src_row", first_ordinal + n_ev)):
                ev[k].append(x)
            n_ev += 1

        def flush() -> Iterator[tuple[str, pa.RecordBatch]]:
            if ev["signal"]:
                yield "evidence", evidence_batch(ev)
                for col in ev.values():
                    col.clear()
        if len(coll):
            for op, seq, dur, size in zip(coll.values("op"), coll.values("seq"),
                                          coll.values("dur_ns"), coll.values(_BYTES_VALUE),
                                          strict=True):
                value(op, seq, "collective_duration", float(dur), "ns")
                if size is not None:
                    value(op, seq, "collective_bytes", size, "bytes")
                if len(ev["signal"]) >= batch_rows - 1:
                    yield from flush()
        if len(spans):
            kind, kinds = spans.codes("kind")
            steps: list[int] = np.nonzero(kind == kinds.index("step"))[0].tolist() \
                if "step" in kinds else []
            clock, clocks = spans.codes("clock")
            device = [i for i in steps if clocks[clock[i]] != "host"]
            step, has = spans.filled["step"]
            dur, _ = spans.ints("dur_ns")
            for i in device or steps:
                value(None, int(step[i]) if has[i] else None, "step_time", float(dur[i]), "ns")
                if len(ev["signal"]) >= batch_rows:
                    yield from flush()
        yield from flush()
