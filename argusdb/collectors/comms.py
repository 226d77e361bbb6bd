"""Shared pieces of the readers of distributed traces: collective names, sizes, steps, batches.

Used by ``argusdb/collectors/kineto`` (NCCL kernel events, gloo annotations) and
``argusdb/collectors/torchdist`` (the argusdb spans recorder). Rows follow ``collective`` and
``trace_span`` of ``argusdb/schema/60_distributed.sql``; evidence rows are ``collective_duration``
(ns), ``collective_bytes`` (bytes) per instance (kernel = op, launch = seq) and ``step_time`` (ns)
per step (launch = step index).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

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


@dataclass
class DistRows:
    """Collectives and spans of one rank, gathered in any order and written sorted by start."""

    rank: int | None
    collectives: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)

    def add_collective(self, **row: Any) -> None:
        row["dur_ns"] = row["end_ns"] - row["start_ns"]
        self.collectives.append(row)

    def add_span(self, **row: Any) -> None:
        row["dur_ns"] = row["end_ns"] - row["start_ns"]
        self.spans.append(row)

    def _assign_steps(self) -> None:
        """Give rows without a step the step (of the same clock) their start falls in."""
        by_clock: dict[str, list[tuple[int, int, int]]] = {}
        for s in self.spans:
            if s["kind"] == "step":
                by_clock.setdefault(s["clock"], []).append((s["start_ns"], s["end_ns"], 0))
        for lst in by_clock.values():
            lst.sort()
            lst[:] = [(a, b, i) for i, (a, b, _) in enumerate(lst)]
        for s in self.spans:
            if s["kind"] == "step" and s.get("step") is None:
                lst = by_clock[s["clock"]]
                s["step"] = next(i for a, b, i in lst if a == s["start_ns"] and b == s["end_ns"])
        # device-side rows may fall in a device step; host-clock steps serve host rows only
        for row in (*self.collectives, *self.spans):
            if row.get("step") is not None:
                continue
            lst = by_clock.get(row["clock"], [])
            if not lst:
                continue
            starts = [a for a, _, _ in lst]
            j = bisect.bisect_right(starts, row["start_ns"]) - 1
            if j >= 0 and row["start_ns"] < lst[j][1]:
                row["step"] = lst[j][2]

    def number(self, seq_given: bool) -> None:
        """Sort by start; number each group's collectives in order unless the source did."""
        self.collectives.sort(key=lambda r: (r["start_ns"], r["end_ns"]))
        self.spans.sort(key=lambda r: (r["start_ns"], r["end_ns"]))
        if not seq_given:
            count: dict[str, int] = {}
            for r in self.collectives:
                r["seq"] = count.get(r["pg"], 0)
                count[r["pg"]] = r["seq"] + 1
        self._assign_steps()

    def batches(self, first_ordinal: int,
                batch_rows: int = 50_000) -> Iterator[tuple[str, pa.RecordBatch]]:
        """``collective``, ``trace_span`` and ``evidence`` batches of at most ``batch_rows``
        rows; evidence src_row from ``first_ordinal`` on (after the reader's other rows)."""
        for table, schema, rows in (("collective", COLLECTIVE_SCHEMA, self.collectives),
                                    ("trace_span", TRACE_SPAN_SCHEMA, self.spans)):
            for lo in range(0, len(rows), batch_rows):
                part = rows[lo:lo + batch_rows]
                cols = {f.name: [r.get(f.name) for r in part]
                        for f in schema if f.name not in ("rank", "src_row")}
                # collective.rank is NOT NULL: a single-process trace is rank 0
                rank = self.rank if self.rank is not None or table == "trace_span" else 0
                yield table, table_batch(schema, {
                    **cols, "rank": [rank] * len(part),
                    "src_row": list(range(lo, lo + len(part)))})
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
        for r in self.collectives:
            value(r["op"], r["seq"], "collective_duration", float(r["dur_ns"]), "ns")
            if r.get("bytes") is not None:
                value(r["op"], r["seq"], "collective_bytes", float(r["bytes"]), "bytes")
            if len(ev["signal"]) >= batch_rows - 1:
                yield from flush()
        steps = [s for s in self.spans if s["kind"] == "step"]
        device = [s for s in steps if s["clock"] != "host"]
        for s in device or steps:
            value(None, s["step"], "step_time", float(s["dur_ns"]), "ns")
            if len(ev["signal"]) >= batch_rows:
                yield from flush()
        yield from flush()
