"""Reader for torch.profiler / Kineto Chrome traces (``.json``, ``.json.gz``).

What it reads:

- ``cat: "kernel"`` events → ``kernel_launch`` rows (name as traced, launch index per name in
  trace order, ``ts``/``dur`` µs → exact integer ns, grid, block, registers per thread, shared
  memory (Kineto writes static + dynamic), device, stream, correlation ID) and one ``evidence``
  row per launch: ``duration`` in ns, scope ``launch=<index>``. Each launch also gets the host
  op that launched it (see :mod:`collectors.kineto.hostops`) and the launching API call: its
  name, start, duration, pid and tid, and its index in ``traceEvents`` (``api_src_row``).
- ``cat: "cuda_profiler_range"`` events (CUPTI range profiler, ``experimental_config`` with
  ``profiler_metrics``) → one ``evidence`` row per counter: signal = the metric name in
  snake_case (``smsp__sass_thread_inst_executed_op_ffma_pred_on.sum`` →
  ``smsp__sass_thread_inst_executed_op_ffma_pred_on_sum``), scope ``launch=<index>`` among the
  ranges of that kernel. Such runs are marked ``counter_replay`` (the range profiler replays
  kernels; the trace does not say how many passes, so ``replay_passes`` stays NULL).
- Header: ``deviceProperties`` → device facts and target (``computeMajor/Minor`` → ``sm_XY``),
  ``schemaVersion`` → ``export_schema``; ``traceName``, ``displayTimeUnit``,
  ``baseTimeNanoseconds`` (``ts`` are relative to it when present), CUDA/CUPTI versions,
  ``distributedInfo`` → ``meta``.

Checks in the first pass, before anything is stored: ``ts``/``dur`` of kernel, runtime, driver,
``cpu_op`` and profiler-range events are numbers (never strings) within a 64-bit nanosecond
clock, ``dur >= 0`` and shorter than 7 days; a kernel's grid, block, registers, shared memory,
device, stream and correlation are non-negative integers; no kernel event repeats another
(same name, start, duration, device, stream and correlation ID); the GPU's compute capability
is a known CUDA target (for NVIDIA devices). A truncated JSON or gzip stream is refused.

Not read: memcpy/memset, syncs, flow (``ac2g``) events (their link is the correlation ID that
kernel events carry already; the export draws the flows again from it), Python stacks.

Memory: two streaming passes. :meth:`KinetoTraceReader.read` scans the trace once with ijson
(header, kernel names, runtime calls and ``cpu_op`` intervals for host-op linkage); the batches
pass streams events through ijson's C backend and yields Arrow batches of ``batch_rows`` rows.
``src_row`` of an evidence row is its ordinal in this reader's output (a profiler range gives
several values); the artefact event is named by kernel and launch index.

Example:
    >>> art = KinetoTraceReader().read(Path("trace.json.gz"))
    >>> sorted({table for table, batch in art.batches()})
    ['evidence', 'kernel_launch']
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import ijson
import numpy as np
import pyarrow as pa

from argusdb.collectors.base import (
    Artefact,
    Interference,
    evidence_batch,
    kernel_launch_batch,
)
from argusdb.collectors.chrome import BUF_SIZE, iter_events, open_binary, read_errors, us_to_ns
from argusdb.collectors.kineto.comms import read_comms
from argusdb.collectors.kineto.hostops import LaunchIndex, ResolvedLaunches
from argusdb.collectors.validate import MAX_INTERVAL_NS, Unique, known_target, measurement
from argusdb.collectors.validate import us_to_ns as checked_ns
from argusdb.errors import InputError

ADAPTER_VERSION = "kineto.trace/1"
#: Rows per Arrow batch; memory of the batches pass is bounded by this, not by the file.
BATCH_ROWS = 4096
_KINETO_CATS = (b'"cpu_op"', b'"kernel"', b'"cuda_runtime"', b'"cuda_driver"', b'"ac2g"',
                b'"python_function"', b'"user_annotation"', b'"cuda_profiler_range"')
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
# Fields of an event the scan needs, by ijson prefix.
_FIELDS = {f"traceEvents.item.{k}": k for k in ("cat", "name", "ph", "pid", "tid", "ts", "dur")}
_FIELDS["traceEvents.item.args.correlation"] = "correlation"
_FIELDS["traceEvents.item.args.device"] = "device"
_FIELDS["traceEvents.item.args.stream"] = "stream"
#: Kernel-event arguments that become integer columns (and therefore must be numbers >= 0).
_INT_ARGS = {f"traceEvents.item.args.{k}": k for k in (
    "grid.item", "block.item", "registers per thread", "shared memory", "device", "stream",
    "correlation")}
#: Event categories whose times argus uses (and therefore checks).
_TIMED = ("kernel", "cuda_profiler_range", "cpu_op", *_LAUNCH_CATS)
_SCALARS = frozenset(("string", "number", "boolean", "null"))
_NOT_SNAKE = re.compile(r"[^0-9a-zA-Z_]+")


def counter_signal(metric: str) -> str:
    """A CUPTI/Perfworks metric name as a snake_case signal: ``a__b.sum`` → ``a__b_sum``."""
    return _NOT_SNAKE.sub("_", metric).strip("_").lower()


def counter_unit(metric: str) -> str | None:
    """Unit implied by the Perfworks naming convention; None where the name does not say."""
    m = metric.lower()
    if m.endswith((".pct", "pct_of_peak_sustained_active", ".pct_of_peak_sustained_elapsed")):
        return "percent"
    if m.endswith(".ratio"):
        return "ratio"
    if m.endswith(".per_second"):
        return "1/s"
    if "__bytes" in m:
        return "bytes"
    if "cycles" in m:
        return "cycles"
    if "inst_executed" in m or "__inst" in m or m.endswith((".sum", ".avg", ".max", ".min")):
        return "count"
    return None


@dataclass
class _Scan:
    """What one pass over the whole trace found."""

    header: dict[str, Any] = field(default_factory=dict)
    kernels: Counter[str] = field(default_factory=Counter)
    ranges: Counter[str] = field(default_factory=Counter)
    devices: set[int] = field(default_factory=set)
    categories: Counter[str] = field(default_factory=Counter)
    index: LaunchIndex = field(default_factory=LaunchIndex)
    has_events: bool = False
    path: Path = Path()
    unique: Unique | None = None
    #: Correlation IDs of the kernel events: the runtime calls the resolved index keeps.
    kernel_corrs: array[int] = field(default_factory=lambda: array("q"))
    resolved: ResolvedLaunches | None = None
    n: int = 0

    def launches(self) -> ResolvedLaunches:
        """The kernels' launching calls, resolved once; then the raw index (56 bytes per
        runtime call, 32 per ``cpu_op``: ~115 MB for a 1 GB trace) is let go."""
        if self.resolved is None:
            self.resolved = self.index.resolve(keep=np.frombuffer(self.kernel_corrs, np.int64))
            self.index, self.kernel_corrs = LaunchIndex(), array("q")
        return self.resolved

    def add(self, ev: dict[str, Any]) -> None:
        i = self.n
        self.n += 1
        cat = ev.get("cat")
        if not isinstance(cat, str):
            return
        self.categories[cat] += 1
        if ev.get("ph") != "X":
            return
        name = ev.get("name")
        ts = dur = None
        if cat in _TIMED:
            where = f"traceEvents[{i}] ({cat})"
            ts = checked_ns(self.path, where, "ts", ev.get("ts"))
            dur = checked_ns(self.path, where, "dur", ev.get("dur"), lo=0) \
                if cat != "cuda_profiler_range" or "dur" in ev else 0
            if dur > MAX_INTERVAL_NS or ts + dur > (1 << 63) - 1:
                raise InputError(str(self.path), f"{where}: 'dur' is {ev.get('dur')} µs, not a "
                                 "plausible duration (more than 7 days or past the 64-bit "
                                 "clock)", "the trace is corrupt or was edited; export it again")
        if cat == "kernel" and "bad_arg" in ev:
            arg, value = ev["bad_arg"]
            raise InputError(str(self.path), f"traceEvents[{i}] (kernel): argument '{arg}' is "
                             f"{value!r}, not a non-negative integer", "the trace is corrupt or "
                             "was edited; export it again")
        if cat == "kernel" and isinstance(name, str):
            self.kernels[name] += 1
            if self.unique is not None:
                self.unique.add((name, ts, dur, ev.get("device"), ev.get("stream"),
                                 ev.get("correlation")), i)
            if isinstance(ev.get("device"), int):
                self.devices.add(ev["device"])
            if ev.get("correlation") is not None:  # a non-negative integer (checked above)
                self.kernel_corrs.append(int(ev["correlation"]))
        elif cat == "cuda_profiler_range" and isinstance(name, str):
            if "huge_arg" in ev:
                raise InputError(str(self.path), f"traceEvents[{i}] (cuda_profiler_range): "
                                 f"counter {ev['huge_arg']!r} is too large to be a measurement "
                                 "(not finite as a float)", "the trace is corrupt or was edited; "
                                 "export it again")
            self.ranges[name] += 1
        elif cat in _LAUNCH_CATS and isinstance(ev.get("correlation"), int):
            assert ts is not None
            assert dur is not None
            self.index.add_runtime(ev.get("pid"), ev.get("tid"), ts, ev["correlation"],
                                   str(name), dur, i)
        elif cat == "cpu_op":
            assert ts is not None and dur is not None
            self.index.add_cpu_op(ev.get("pid"), ev.get("tid"), ts, ts + dur, str(name))


def _scan(path: Path) -> _Scan:
    """One ijson pass: header values (built whole; they are small) and the fields of each event
    that the index needs (never the whole event)."""
    sc = _Scan(path=path, unique=Unique(path, "kernel event", _event_label))
    key: str | None = None
    builder: Any = None
    ev: dict[str, Any] = {}

    def finish() -> None:
        if key is not None and builder is not None:
            sc.header[key] = builder.value

    with read_errors(path, "Kineto trace"), open_binary(path) as fh:
        for prefix, event, value in ijson.parse(fh, buf_size=BUF_SIZE):
            if prefix.startswith("traceEvents."):
                if prefix == "traceEvents.item":
                    if event == "start_map":
                        ev = {}
                    elif event == "end_map":
                        sc.add(ev)
                elif event in _SCALARS:
                    f = _FIELDS.get(prefix)
                    if f is not None:
                        ev[f] = value
                    elif event == "number" and prefix.startswith("traceEvents.item.args.") \
                            and not math.isfinite(float(value)):
                        ev.setdefault("huge_arg", prefix.rsplit(".", 1)[-1])
                    if prefix in _INT_ARGS and event != "null" and (
                            event != "number" or value < 0 or value != int(value)
                            or value > (1 << 63) - 1):
                        ev.setdefault("bad_arg", (_INT_ARGS[prefix].removesuffix(".item"),
                                                  value))
                continue
            if prefix == "":
                if event == "map_key":
                    finish()
                    key = value
                    builder = None if value == "traceEvents" else ijson.ObjectBuilder()
                    sc.has_events = sc.has_events or value == "traceEvents"
                elif event == "end_map":
                    finish()
                    key = builder = None
                continue
            if builder is not None:
                builder.event(event, value)
    if sc.unique is not None:
        sc.unique.check()
        sc.unique = None  # 16 bytes per kernel, needed no more
    return sc


def _event_label(i: int) -> str:
    return f"traceEvents[{i}]"


class KinetoTraceReader:
    """torch.profiler / Kineto Chrome trace (``export_chrome_trace``), plain or gzip."""

    kind = "kineto.trace"

    def __init__(self, batch_rows: int = BATCH_ROWS) -> None:
        self.batch_rows = batch_rows

    def sniff(self, path: Path, head: bytes) -> bool:
        if not head.lstrip().startswith(b"{") or b'"call_stack"' in head:
            return False  # Proton's Chrome traces carry call_stack: collectors.proton reads them
        if b'"schemaVersion"' in head or b'"deviceProperties"' in head:
            return True
        return b'"traceEvents"' in head and any(c in head for c in _KINETO_CATS)

    def read(self, path: Path) -> Artefact:
        sc = _scan(path)
        if not sc.has_events:
            raise InputError(str(path), "has no 'traceEvents' array",
                             "pass a trace written by torch.profiler's export_chrome_trace")
        launch = _launch(sc.header)
        dist = bool(launch) or any(k.startswith("nccl") for k in sc.kernels)
        if not sc.kernels and not sc.ranges and not launch:
            raise InputError(str(path), "has no GPU kernel events (cat 'kernel') and no CUPTI "
                             "profiler ranges", "profile with activities=[ProfilerActivity.CPU, "
                             "ProfilerActivity.CUDA] and export the trace again")
        device, target = _devices(path, sc)
        hdr = sc.header
        meta: dict[str, Any] = {k: v for k, v in hdr.items() if k != "deviceProperties"
                                and len(json.dumps(v, default=str)) <= 1024}
        meta.update(kernel_events=sum(sc.kernels.values()),
                    profiler_ranges=sum(sc.ranges.values()),
                    events_by_category=dict(sc.categories.most_common()),
                    clock="ts_ns relative to baseTimeNanoseconds" if "baseTimeNanoseconds" in hdr
                    else "the trace's own clock (µs → ns)")
        itf = Interference(
            # Host-op tracing is what perturbs; a CUDA-activity-only trace is activity tracing.
            torch_profiler=bool(sc.categories.get("cpu_op")
                                or sc.categories.get("user_annotation")),
            activity_tracing=bool(sc.kernels) or sc.index.n_runtime > 0,
            counter_replay=bool(sc.ranges))
        names = sorted(set(sc.kernels) | (set(sc.ranges) - {"__missing__"}))
        schema = hdr.get("schemaVersion")
        return Artefact(
            path=str(path), collector="kineto", kind=self.kind, tool="torch.profiler (Kineto)",
            adapter_version=ADAPTER_VERSION, batches=lambda: self._batches(path, sc, dist),
            tool_version=None, export_schema=None if schema is None else str(schema),
            interference=itf, target=target, device=device, kernels=names,
            meta=json.loads(json.dumps(meta, default=str)), launch=launch,
            # a launch and its duration per kernel event; a range has one or more counters
            rows_hint=2 * sum(sc.kernels.values()) + sum(sc.ranges.values()))

    def _batches(self, path: Path, sc: _Scan,
                 dist: bool = False) -> Iterator[tuple[str, pa.RecordBatch]]:
        launches = sc.launches()
        out = _Out(launches)
        seen: dict[str, int] = {}
        range_seen: dict[str, int] = {}
        for i, ev in iter_events(path, "Kineto trace"):
            cat = ev.get("cat")
            if ev.get("ph") != "X" or cat not in ("kernel", "cuda_profiler_range"):
                continue
            name = ev.get("name")
            if not isinstance(name, str):
                raise InputError(str(path), f"traceEvents[{i}] ({cat}) has no name",
                                 "export the trace again")
            args = ev.get("args") or {}
            name = out.names.setdefault(name, name)
            if cat == "kernel":
                idx = seen.get(name, 0)
                seen[name] = idx + 1
                out.kernel(path, i, name, idx, ev, args)
            else:
                idx = range_seen.get(name, 0)
                range_seen[name] = idx + 1
                out.counters(path, i, None if name == "__missing__" else name, idx, args)
            if out.size() >= self.batch_rows:
                yield from out.flush()
        yield from out.flush()
        if dist:  # collectives, steps and host ops of one rank of a distributed program
            yield from read_comms(path, _launch(sc.header).get("rank")).batches(
                out.ordinal, self.batch_rows)


class _Out:
    """Columnar row buffers for one batch of each table."""

    def __init__(self, launches: ResolvedLaunches) -> None:
        self.launches = launches
        self.kl: dict[str, list[Any]] = {}
        self.ev: dict[str, list[Any]] = {}
        self.ordinal = 0
        # One string object per distinct kernel name: C++ template names run to kilobytes,
        # and a batch would otherwise hold one copy per launch.
        self.names: dict[str, str] = {}
        self._reset()

    def _reset(self) -> None:
        self.kl = {k: [] for k in ("kernel", "launch", "start_ns", "end_ns", "dur_ns",
                                   "correlation_id", "grid_x", "grid_y", "grid_z", "block_x",
                                   "block_y", "block_z", "registers", "shared_bytes",
                                   "device_id", "stream_id")}
        self.ev = {k: [] for k in ("kernel", "launch", "signal", "value", "unit", "src_row")}

    def size(self) -> int:
        return max(len(self.kl["kernel"]), len(self.ev["signal"]))

    def _value(self, kernel: str | None, launch: int, signal: str, value: float,
               unit: str | None) -> None:
        for k, v in (("kernel", kernel), ("launch", str(launch)), ("signal", signal),
                     ("value", value), ("unit", unit), ("src_row", self.ordinal)):
            self.ev[k].append(v)
        self.ordinal += 1

    def kernel(self, path: Path, i: int, name: str, idx: int, ev: dict[str, Any],
               args: dict[str, Any]) -> None:
        start, dur = us_to_ns(ev.get("ts")), us_to_ns(ev.get("dur"))
        if start is None or dur is None:
            raise InputError(str(path), f"kernel event traceEvents[{i}] ({name[:60]}) lacks "
                             "'ts' or 'dur'", "export the trace again")
        grid = _dims(args.get("grid"))
        block = _dims(args.get("block"))
        row = {"kernel": name, "launch": idx, "start_ns": start, "end_ns": start + dur,
               "dur_ns": dur, "correlation_id": _int(args.get("correlation")),
               "grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2], "block_x": block[0],
               "block_y": block[1], "block_z": block[2],
               "registers": _int(args.get("registers per thread")),
               "shared_bytes": _int(args.get("shared memory")),
               "device_id": _int(args.get("device")), "stream_id": _int(args.get("stream"))}
        for k, v in row.items():
            self.kl[k].append(v)
        self._value(name, idx, "duration", float(dur), "ns")

    def counters(self, path: Path, i: int, kernel: str | None, idx: int,
                 args: dict[str, Any]) -> None:
        for metric, value in args.items():
            if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
                continue
            v = measurement(path, f"traceEvents[{i}]", metric, value, signed=True)
            self._value(kernel, idx, counter_signal(metric), v, counter_unit(metric))

    def flush(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        if self.ev["signal"]:
            yield "evidence", evidence_batch(self.ev)
        if self.kl["kernel"]:
            calls = self.launches.lookup(self.kl["correlation_id"])
            yield "kernel_launch", kernel_launch_batch({**self.kl, **calls.columns()})
        self._reset()


def _launch(header: dict[str, Any]) -> dict[str, Any]:
    """Rank, world size, launch group and device of a rank's trace: Kineto's
    ``distributedInfo``, completed by the ``argusLaunch`` object of the argusdb recorder."""
    info_v, own_v = header.get("distributedInfo"), header.get("argusLaunch")
    info: dict[str, Any] = info_v if isinstance(info_v, dict) else {}
    own: dict[str, Any] = own_v if isinstance(own_v, dict) else {}
    out: dict[str, Any] = {}
    for k in ("rank", "world_size"):
        v = _int(info.get(k)) if _int(info.get(k)) is not None else _int(own.get(k))
        if v is not None:
            out[k] = v
    if isinstance(own.get("launch_group"), str):
        out["launch_group"] = own["launch_group"]
    return out


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float | Decimal) and not isinstance(v, bool) else None


def _dims(v: Any) -> tuple[int | None, int | None, int | None]:
    if isinstance(v, list) and len(v) == 3:
        return _int(v[0]), _int(v[1]), _int(v[2])
    return None, None, None


def _devices(path: Path, sc: _Scan) -> tuple[dict[str, Any], str | None]:
    """Device facts of the GPUs the kernels ran on, and their common target."""
    props = [p for p in sc.header.get("deviceProperties") or [] if isinstance(p, dict)]
    used = [p for p in props if p.get("id") in sc.devices] or props
    facts = [{k: _jsonable(v) for k, v in p.items()} for p in used]
    # A CUDA target only for NVIDIA GPUs (ROCm traces state computeMajor/Minor too).
    targets = {known_target(path, f"{p.get('computeMajor')}.{p.get('computeMinor')}",
                            "compute capability (deviceProperties)")
               for p in used if p.get("computeMajor") is not None
               and "nvidia" in str(p.get("name", "nvidia")).lower()}
    names = {p.get("name") for p in used}
    device: dict[str, Any] = {"devices": facts, "devices_in_trace": len(props)}
    if len(names) == 1:
        device["name"] = names.pop()
    target = targets.pop() if len(targets) == 1 else None
    if target:
        device["target"] = target
    return device, target


def _jsonable(v: Any) -> Any:
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v
