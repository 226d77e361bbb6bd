"""Reader for cupti-python activity records (JSON lines).

Every record is checked before anything is stored: ``start``/``end`` are integer nanoseconds in
the 64-bit range with ``end >= start`` (and a kernel shorter than 7 days), grid, block, register
and shared-memory fields are non-negative integers, and no record repeats another (CUPTI
delivers each activity once: a repeated record means a concatenated file, which would double
the launches). See :mod:`collectors.validate`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import (
    Artefact,
    Interference,
    evidence_batch,
    kernel_launch_batch,
    launch_shapes,
    open_text,
)
from argusdb.collectors.validate import INT32_MAX, Unique, int_field, interval, ns_timestamp
from argusdb.errors import InputError

ADAPTER_VERSION = "cupti.activity/1"
_BATCH = 50_000
#: Integer fields of a kernel record and their largest plausible value (all are >= 0).
_INT_FIELDS = {"correlation_id": (1 << 63) - 1, "grid_x": INT32_MAX, "grid_y": INT32_MAX,
               "grid_z": INT32_MAX, "block_x": INT32_MAX, "block_y": INT32_MAX,
               "block_z": INT32_MAX, "registers_per_thread": INT32_MAX,
               "static_shared_memory": INT32_MAX, "dynamic_shared_memory": INT32_MAX,
               "device_id": INT32_MAX, "stream_id": (1 << 63) - 1}
_KERNEL_KINDS = ("CONCURRENT_KERNEL", "KERNEL")
#: cupti-python activity record field → kernel_launch column (computed columns are added apart).
_LAUNCH_COLUMNS = {"start": "start_ns", "end": "end_ns", "correlation_id": "correlation_id",
                   "grid_x": "grid_x", "grid_y": "grid_y", "grid_z": "grid_z",
                   "block_x": "block_x", "block_y": "block_y", "block_z": "block_z",
                   "registers_per_thread": "registers", "device_id": "device_id",
                   "stream_id": "stream_id"}


class ActivityJsonlReader:
    """``*.cupti.jsonl``: one activity record per line with a ``kind`` field."""

    kind = "cupti.activity_jsonl"

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.lstrip().split(b"\n", 1)[0]
        return first.startswith(b"{") and b'"kind"' in first and (
            b'"RUNTIME"' in first or b'"CONCURRENT_KERNEL"' in first or b'"KERNEL"' in first
            or b'"DRIVER"' in first)

    def _records(self, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
        with open_text(path) as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(str(path), f"line {i + 1} is not a JSON record ({exc.msg})",
                                     "the file is truncated or corrupt; record it again") from exc
                if not isinstance(rec, dict) or "kind" not in rec:
                    raise InputError(str(path), f"line {i + 1} has no 'kind' field",
                                     "pass a cupti-python activity JSONL file")
                yield i, _checked(path, i, rec)

    def read(self, path: Path) -> Artefact:
        kernels: set[str] = set()
        devices: set[int] = set()
        shapes: set[tuple[str, int | None, int | None, int | None]] = set()
        unique = Unique(path, "activity record", lambda n: f"line {n}")
        for i, rec in self._records(path):
            unique.add(tuple(rec.get(k) for k in ("kind", "start", "end", "correlation_id",
                                                  "device_id", "stream_id", "thread_id",
                                                  "name")), i + 1)
            if rec["kind"] in _KERNEL_KINDS:
                for f in ("name", "start", "end"):
                    if f not in rec:
                        raise InputError(str(path), f"a kernel record lacks '{f}'",
                                         "pass a complete cupti-python activity export")
                kernels.add(rec["name"])
                devices.add(rec.get("device_id") or 0)
                threads = (rec.get("block_x") or 1) * (rec.get("block_y") or 1) * (
                    rec.get("block_z") or 1)
                shapes.add((rec["name"], threads, rec.get("registers_per_thread"),
                            (rec.get("static_shared_memory") or 0)
                            + (rec.get("dynamic_shared_memory") or 0)))
        unique.check()
        return Artefact(
            path=str(path), collector="cupti", kind=self.kind, tool="cupti-python",
            adapter_version=ADAPTER_VERSION, batches=lambda: self._batches(path),
            interference=Interference(activity_tracing=True),
            kernels=sorted(kernels), device={"device_ids": sorted(devices)},
            meta={"devices": sorted(devices), "launch_shape": launch_shapes(shapes)})

    def _batches(self, path: Path) -> Iterator[tuple[str, pa.RecordBatch]]:
        seen: dict[str, int] = {}
        kl: dict[str, list[Any]] = {k: [] for k in (*_LAUNCH_COLUMNS.values(), "kernel", "launch",
                                                    "dur_ns", "shared_bytes")}
        ev: dict[str, list[Any]] = {k: [] for k in ("kernel", "launch", "signal", "value", "unit",
                                                    "src_row")}
        for row, rec in self._records(path):
            if rec["kind"] not in _KERNEL_KINDS:
                continue
            name = rec["name"]
            idx = seen.get(name, 0)
            seen[name] = idx + 1
            for field_, col in _LAUNCH_COLUMNS.items():
                kl[col].append(rec.get(field_))
            kl["kernel"].append(name)
            kl["launch"].append(idx)
            kl["dur_ns"].append(rec["end"] - rec["start"])
            kl["shared_bytes"].append((rec.get("static_shared_memory") or 0)
                                      + (rec.get("dynamic_shared_memory") or 0))
            ev["kernel"].append(name)
            ev["launch"].append(str(idx))
            ev["signal"].append("duration")
            ev["value"].append(float(rec["end"] - rec["start"]))
            ev["unit"].append("ns")
            ev["src_row"].append(row)
            if len(ev["kernel"]) >= _BATCH:
                yield from self._flush(kl, ev)
        if ev["kernel"]:
            yield from self._flush(kl, ev)

    @staticmethod
    def _flush(kl: dict[str, list[Any]], ev: dict[str, list[Any]]
               ) -> Iterator[tuple[str, pa.RecordBatch]]:
        yield "evidence", evidence_batch(ev)
        yield "kernel_launch", kernel_launch_batch(kl)
        for cols in (kl, ev):
            for v in cols.values():
                v.clear()


def _checked(path: Path, i: int, rec: dict[str, Any]) -> dict[str, Any]:
    """A record whose timestamps and integer fields are plausible (see the module docstring)."""
    where = f"line {i + 1} ({rec['kind']})"
    if rec["kind"] in _KERNEL_KINDS:
        name = rec.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(str(path), f"{where}: a kernel record without a 'name'",
                             "pass a complete cupti-python activity export")
        for f, hi in _INT_FIELDS.items():
            if f in rec:
                rec[f] = int_field(path, where, f, rec[f], 0, hi)
    if rec["kind"] in _KERNEL_KINDS or "start" in rec or "end" in rec:
        start = ns_timestamp(path, where, "start", rec.get("start"))
        end = ns_timestamp(path, where, "end", rec.get("end"))
        interval(path, where, start, end)
        rec["start"], rec["end"] = start, end
    return rec
