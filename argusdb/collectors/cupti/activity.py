"""Reader for cupti-python activity records (JSON lines).

Every record is checked before anything is stored: ``start``/``end`` are integer nanoseconds in
the 64-bit range with ``end >= start`` (and a kernel shorter than 7 days), grid, block, register
and shared-memory fields are non-negative integers, and no record repeats another (CUPTI
delivers each activity once: a repeated record means a concatenated file, which would double
the launches). See :mod:`collectors.validate`.

A kernel's launching call is the ``RUNTIME`` or ``DRIVER`` record with its correlation ID
(CUPTI gives the pair one ID): ``launch_api`` is named from the record's ``cbid`` through the
launch entries of CUDA 13.0's ``cupti_runtime_cbid.h`` / ``cupti_driver_cbid.h`` (version
suffix dropped, as Kineto names them; another cbid is ``cbid <n>``), and ``api_start_ns``,
``api_dur_ns``, ``api_pid``, ``api_tid`` and ``api_src_row`` (its 0-based line) are the record's.
Kernels launched through a call that was not recorded (a driver call when only the runtime
domain was enabled, as in Triton's launches under cupti-python's runtime tracing) keep NULLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import (
    Artefact,
    Interference,
    evidence_batch,
    json_lines,
    kernel_launch_batch,
    launch_shapes,
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
#: First line of the files argusdb writes (``argusdb.observe.runner.gpu_tools.write_jsonl``):
#: such a file must end with a :data:`TRAILER` record counting the records between them.
HEADER = {"kind": "ARGUS_HEADER", "writer": "argusdb", "format": "cupti.activity_jsonl"}
TRAILER = "ARGUS_TRAILER"
_KERNEL_KINDS = ("CONCURRENT_KERNEL", "KERNEL")
#: The record argusdb's replay worker ends its timing file with: the kernels ran as replays of
#: a captured launch (restored inputs, L2 flushed before each), not in their program.
REPLAY_KIND = "LAUNCH_REPLAY"
_API_KINDS = ("RUNTIME", "DRIVER")
#: Launching calls by (record kind, cbid): CUPTI_RUNTIME_TRACE_CBID_* and
#: CUPTI_DRIVER_TRACE_CBID_* of CUDA 13.0, version suffix dropped.
LAUNCH_CBIDS: dict[tuple[str, Any], str] = {
    ("RUNTIME", 13): "cudaLaunch", ("RUNTIME", 211): "cudaLaunchKernel",
    ("RUNTIME", 213): "cudaLaunch_ptsz", ("RUNTIME", 214): "cudaLaunchKernel_ptsz",
    ("RUNTIME", 269): "cudaLaunchCooperativeKernel",
    ("RUNTIME", 270): "cudaLaunchCooperativeKernel_ptsz",
    ("RUNTIME", 272): "cudaLaunchCooperativeKernelMultiDevice",
    ("RUNTIME", 311): "cudaGraphLaunch", ("RUNTIME", 312): "cudaGraphLaunch_ptsz",
    ("RUNTIME", 430): "cudaLaunchKernelExC", ("RUNTIME", 431): "cudaLaunchKernelExC_ptsz",
    ("RUNTIME", 505): "__cudaLaunchKernel", ("RUNTIME", 506): "__cudaLaunchKernel_ptsz",
    ("DRIVER", 115): "cuLaunch", ("DRIVER", 116): "cuLaunchGrid",
    ("DRIVER", 117): "cuLaunchGridAsync", ("DRIVER", 307): "cuLaunchKernel",
    ("DRIVER", 442): "cuLaunchKernel_ptsz", ("DRIVER", 477): "cuLaunchCooperativeKernel",
    ("DRIVER", 478): "cuLaunchCooperativeKernel_ptsz",
    ("DRIVER", 480): "cuLaunchCooperativeKernelMultiDevice", ("DRIVER", 514): "cuGraphLaunch",
    ("DRIVER", 515): "cuGraphLaunch_ptsz", ("DRIVER", 652): "cuLaunchKernelEx",
    ("DRIVER", 653): "cuLaunchKernelEx_ptsz"}
#: kernel_launch columns of the launching call.
_API_COLUMNS = ("launch_api", "api_start_ns", "api_dur_ns", "api_pid", "api_tid", "api_src_row")
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
            or b'"DRIVER"' in first or b'"ARGUS_HEADER"' in first)

    def _records(self, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
        """The activity records; a file argusdb wrote (its first line the :data:`HEADER`)
        must end with the :data:`TRAILER` and its count, else it was cut short."""
        framed, count, trailer = False, 0, None
        for i, rec in json_lines(path, "record it again"):
            if "kind" not in rec:
                raise InputError(str(path), f"line {i + 1} has no 'kind' field",
                                 "pass a cupti-python activity JSONL file")
            if trailer is not None:
                raise InputError(str(path), f"line {i + 1}: a record after the trailer "
                                 f"(line {trailer})", "pass the file as argusdb wrote it")
            if rec["kind"] == HEADER["kind"] and not count and not framed:
                framed = True
                continue
            if rec["kind"] == TRAILER:
                said = rec.get("records")
                if said != count:
                    raise InputError(str(path), f"line {i + 1}: its trailer counts {said!r} "
                                     f"records, the file holds {count}",
                                     "the file is truncated or was edited; record it again")
                trailer = i + 1
                continue
            count += 1
            yield i, _checked(path, i, rec)
        if framed and trailer is None:
            raise InputError(str(path), f"ends after {count} records without the trailer that "
                             "argusdb writes last: the file was cut short",
                             "record it again (or copy it whole)")

    def read(self, path: Path) -> Artefact:
        kernels: set[str] = set()
        devices: set[int] = set()
        shapes: set[tuple[str, int | None, int | None, int | None]] = set()
        unique = Unique(path, "activity record", lambda n: f"line {n}")
        replay: dict[str, Any] | None = None
        for i, rec in self._records(path):
            if rec["kind"] == REPLAY_KIND:  # argusdb's replay worker: a standing of its own
                replay = {k: v for k, v in rec.items() if k != "kind"}
                continue
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
            interference=Interference(activity_tracing=True, launch_replay=replay is not None,
                                      cache_control="all" if replay else None),
            kernels=sorted(kernels), device={"device_ids": sorted(devices)},
            meta={"devices": sorted(devices), "launch_shape": launch_shapes(shapes),
                  **({"launch_replay": replay} if replay else {})})

    def _calls(self, path: Path) -> dict[Any, tuple[Any, ...]]:
        """Correlation ID → the launching call's columns (:data:`_API_COLUMNS`), for the
        correlation IDs kernel records carry (the first call by line where several share one)."""
        wanted: set[int] = set()
        calls: dict[Any, tuple[Any, ...]] = {}
        for row, rec in self._records(path):
            corr = rec.get("correlation_id")
            if not isinstance(corr, int) or isinstance(corr, bool):
                continue
            if rec["kind"] in _KERNEL_KINDS:
                wanted.add(corr)
            elif rec["kind"] in _API_KINDS and corr not in calls and "start" in rec:
                cbid = rec.get("cbid")
                name = LAUNCH_CBIDS.get((rec["kind"], cbid), f"cbid {cbid}")
                calls[corr] = (name, rec["start"], rec["end"] - rec["start"],
                               _id(rec.get("process_id")), _id(rec.get("thread_id")), row)
        return {c: v for c, v in calls.items() if c in wanted}

    def _batches(self, path: Path) -> Iterator[tuple[str, pa.RecordBatch]]:
        seen: dict[str, int] = {}
        calls = self._calls(path)
        none = (None,) * len(_API_COLUMNS)
        kl: dict[str, list[Any]] = {k: [] for k in (*_LAUNCH_COLUMNS.values(), "kernel", "launch",
                                                    "dur_ns", "shared_bytes", *_API_COLUMNS)}
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
            for col, v in zip(_API_COLUMNS, calls.get(rec.get("correlation_id"), none),
                              strict=True):
                kl[col].append(v)
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


def _id(v: Any) -> int | None:
    """A process or thread ID as the record gives it (an integer), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63 else None


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
