"""Readers for Proton Chrome traces (``proton.finalize(output_format='chrome_trace')``).

Two kinds, told apart by their events:

- **kernel timeline** (``data='trace'``): ``cat: "kernel"`` events with ``args.call_stack``
  (``["ROOT", <scopes>..., <kernel>]``) → ``kernel_launch`` rows (launch index per name in trace
  order, ``ts``/``dur`` µs → exact ns on Proton's clock, which starts at the first kernel) and a
  ``duration`` evidence row per launch with ``scope_path`` (``s/k``). Activity tracing.
- **intra-kernel instrumentation** (``backend='instrumentation'``): one event per scope instance
  per recorded CTA and warp; ``pid`` is ``"<kernel> Core<sm> CTA<cta>"``, ``tid`` is
  ``"warp <w> (line <l>)"``, ``name`` the scope, ``args."Frequency (MHz)"`` the nominal clock
  Proton divided cycles by to write µs. Each event → ``scope_cycles`` = ``dur × frequency``
  (clock cycles, exact), unit ``cycles``, with scope ``sm``, ``cta``, ``warp`` and
  ``scope_path`` ``<kernel>/<scope>``. Times in ns would be a fiction: the nominal frequency
  (1000 MHz) is not the SM clock. Proton records a subset of CTAs (its buffer size decides); the
  trace does not number launches, so ``launch`` stays ``'all'``. Instrumentation run. Each
  event also gives a ``scope_event`` row (scope, CTA, SM, warp, ``ts``/``dur`` → exact ns on the
  trace's own nominal clock, cycles) so that timelines can place it; its ``src_row`` is the
  evidence row's.

Checks in the first pass, before anything is stored: ``ts``/``dur`` are numbers (never
strings) on a 64-bit nanosecond clock with ``dur >= 0`` and shorter than 7 days, the frequency
is a positive number, and no event repeats another exactly (same kernel or CTA/warp, scope,
start and duration): Proton writes each launch and each scope instance once.

Both stream events with ijson and yield batches of ``batch_rows`` rows; ``src_row`` is the
event's index in ``traceEvents`` (one value per event).

Example:
    >>> art = ProtonInstrTraceReader().read(Path("instr_trace.chrome_trace"))
    >>> art.interference.instrumentation
    True
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import Artefact, Interference, evidence_batch, kernel_launch_batch
from argusdb.collectors.chrome import iter_events, us_to_ns
from argusdb.collectors.validate import Unique, interval, measurement
from argusdb.collectors.validate import us_to_ns as checked_ns
from argusdb.errors import InputError
from argusdb.schema import shape

BATCH_ROWS = 4096
_CORE_CTA = re.compile(r"^(?P<kernel>.*?)\s*Core(?P<sm>\d+)\s+CTA(?P<cta>\d+)$")
_WARP = re.compile(r"^warp\s+(?P<warp>\d+)")
_INSTR_MARK = re.compile(rb'"Frequency \(MHz\)"|Core\d+ CTA\d+')


def _is_proton_trace(head: bytes) -> bool:
    h = head.lstrip()
    return (h.startswith(b"{") or h.startswith(b"[")) and b'"call_stack"' in h


def _stack(ev: dict[str, Any]) -> list[str]:
    st = (ev.get("args") or {}).get("call_stack") or []
    names = [str(s) for s in st]
    return names[1:] if names[:1] == ["ROOT"] else names


class ProtonTraceReader:
    """Proton kernel timeline (``data='trace'``, Chrome trace format)."""

    kind = "proton.trace"

    def __init__(self, batch_rows: int = BATCH_ROWS) -> None:
        self.batch_rows = batch_rows

    def sniff(self, path: Path, head: bytes) -> bool:
        return _is_proton_trace(head) and not _INSTR_MARK.search(head)

    def read(self, path: Path) -> Artefact:
        kernels: Counter[str] = Counter()
        unique = Unique(path, "kernel event", _event_label)
        for i, ev in iter_events(path, "Proton trace"):
            if ev.get("cat") == "kernel" and ev.get("ph") == "X":
                kernels[str(ev.get("name"))] += 1
                ts, dur = _times(path, i, ev)
                unique.add((str(ev.get("name")), ts, dur, tuple(_stack(ev))), i)
        unique.check()
        if not kernels:
            raise InputError(str(path), "has no kernel events",
                             "profile a run that launches kernels between proton.start and "
                             "proton.finalize")
        return Artefact(
            path=str(path), collector="proton", kind=self.kind, tool="Proton (triton.profiler)",
            adapter_version="proton.trace/1", batches=lambda: self._batches(path),
            interference=Interference(activity_tracing=True), kernels=sorted(kernels),
            meta={"kernel_events": sum(kernels.values()),
                  "clock": "relative clock as Proton writes it (µs → ns)"})

    def _batches(self, path: Path) -> Iterator[tuple[str, pa.RecordBatch]]:
        seen: dict[str, int] = {}
        kl: dict[str, list[Any]] = {k: [] for k in ("kernel", "launch", "start_ns", "end_ns",
                                                    "dur_ns")}
        ev_cols: dict[str, list[Any]] = {k: [] for k in ("kernel", "launch", "signal", "value",
                                                         "unit", "scope_path", "src_row")}
        for i, ev in iter_events(path, "Proton trace"):
            if ev.get("cat") != "kernel" or ev.get("ph") != "X":
                continue
            name = str(ev.get("name"))
            start, dur = us_to_ns(ev.get("ts")), us_to_ns(ev.get("dur"))
            if start is None or dur is None:
                raise InputError(str(path), f"kernel event traceEvents[{i}] lacks 'ts' or 'dur'",
                                 "export the trace again")
            idx = seen.get(name, 0)
            seen[name] = idx + 1
            launch: dict[str, Any] = {"kernel": name, "launch": idx, "start_ns": start,
                                      "end_ns": start + dur, "dur_ns": dur}
            value: dict[str, Any] = {"kernel": name, "launch": str(idx), "signal": "duration",
                                     "value": float(dur), "unit": "ns",
                                     "scope_path": "/".join(_stack(ev)) or name, "src_row": i}
            for k, v in launch.items():
                kl[k].append(v)
            for k, v in value.items():
                ev_cols[k].append(v)
            if len(kl["kernel"]) >= self.batch_rows:
                yield "evidence", evidence_batch(ev_cols)
                yield "kernel_launch", kernel_launch_batch(kl)
                for col in (*kl.values(), *ev_cols.values()):
                    col.clear()
        if kl["kernel"]:
            yield "evidence", evidence_batch(ev_cols)
            yield "kernel_launch", kernel_launch_batch(kl)


class ProtonInstrTraceReader:
    """Proton intra-kernel instrumentation trace: per-CTA, per-warp scope events."""

    kind = "proton.instr_trace"

    def __init__(self, batch_rows: int = BATCH_ROWS) -> None:
        self.batch_rows = batch_rows

    def sniff(self, path: Path, head: bytes) -> bool:
        return _is_proton_trace(head) and bool(_INSTR_MARK.search(head))

    def read(self, path: Path) -> Artefact:
        kernels: Counter[str] = Counter()
        scopes: Counter[str] = Counter()
        ctas: set[tuple[str, str]] = set()
        sms: set[str] = set()
        freqs: set[str] = set()
        unique = Unique(path, "scope event", _event_label)
        for i, ev in iter_events(path, "Proton instrumentation trace"):
            if ev.get("ph") != "X":
                continue
            where = _where(path, i, ev)
            ts, dur = _times(path, i, ev)
            unique.add((str(ev.get("pid")), str(ev.get("tid")), str(ev.get("name")), ts, dur),
                       i)
            kernels[where["kernel"]] += 1
            scopes[str(ev.get("name"))] += 1
            ctas.add((where["kernel"], where["cta"]))
            sms.add(where["sm"])
            freqs.add(str(_frequency(path, i, ev)))
        unique.check()
        if not kernels:
            raise InputError(str(path), "has no scope events",
                             "instrument the kernel with triton.profiler.language scopes")
        return Artefact(
            path=str(path), collector="proton", kind=self.kind, tool="Proton (triton.profiler)",
            adapter_version="proton.instr_trace/1", batches=lambda: self._batches(path),
            interference=Interference(instrumentation=True), kernels=sorted(kernels),
            meta={"scope_events": sum(kernels.values()), "scopes": dict(scopes),
                  "ctas_recorded": len(ctas), "sms_recorded": len(sms),
                  "frequency_mhz": sorted(freqs),
                  "unit": "cycles = dur (µs) × Frequency (MHz); the frequency is nominal"})

    def _batches(self, path: Path) -> Iterator[tuple[str, pa.RecordBatch]]:
        cols: dict[str, list[Any]] = {k: [] for k in ("kernel", "cta", "sm", "warp", "signal",
                                                      "value", "unit", "scope_path", "src_row")}
        # The same events with their start times, for timelines (the Perfetto export).
        spans: dict[str, list[Any]] = {f.name: [] for f in SCOPE_EVENT_SCHEMA}
        for i, ev in iter_events(path, "Proton instrumentation trace"):
            if ev.get("ph") != "X":
                continue
            where = _where(path, i, ev)
            freq = _frequency(path, i, ev)
            start, dur = us_to_ns(ev.get("ts")), us_to_ns(ev.get("dur"))
            if start is None or dur is None:
                raise InputError(str(path), f"scope event traceEvents[{i}] lacks 'ts' or 'dur'",
                                 "export the trace again")
            cycles = float((Decimal(ev["dur"]) * freq).to_integral_value(ROUND_HALF_EVEN))
            name = str(ev.get("name"))
            scope = "/".join([*_stack(ev), name])
            for k, v in (("kernel", where["kernel"]), ("cta", where["cta"]), ("sm", where["sm"]),
                         ("warp", where["warp"]), ("signal", "scope_cycles"),
                         ("value", cycles), ("unit", "cycles"), ("scope_path", scope),
                         ("src_row", i)):
                cols[k].append(v)
            for k, v in (("kernel", where["kernel"]), ("scope", name), ("scope_path", scope),
                         ("cta", where["cta"]), ("sm", where["sm"]), ("warp", where["warp"]),
                         ("start_ns", start), ("dur_ns", dur), ("cycles", cycles),
                         ("src_row", i)):
                spans[k].append(v)
            if len(cols["signal"]) >= self.batch_rows:
                yield from _flush(cols, spans)
        if cols["signal"]:
            yield from _flush(cols, spans)


#: Columns of the ``scope_event`` batches (``run_id`` is filled by ingest).
SCOPE_EVENT_SCHEMA = shape.batch_schema("scope_event")


def _flush(cols: dict[str, list[Any]], spans: dict[str, list[Any]]
           ) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Yield the pending evidence and scope_event rows as batches and empty the buffers."""
    yield "evidence", evidence_batch(cols)
    yield "scope_event", pa.RecordBatch.from_pydict(spans, schema=SCOPE_EVENT_SCHEMA)
    for col in (*cols.values(), *spans.values()):
        col.clear()


def _where(path: Path, i: int, ev: dict[str, Any]) -> dict[str, str]:
    """Kernel, SM, CTA and warp of an instrumentation event, from its pid and tid labels."""
    m = _CORE_CTA.match(str(ev.get("pid", "")))
    w = _WARP.match(str(ev.get("tid", "")))
    if not m or not w:
        raise InputError(str(path), f"traceEvents[{i}] has pid {ev.get('pid')!r} and tid "
                         f"{ev.get('tid')!r}, not '<kernel> Core<sm> CTA<cta>' and 'warp <w>'",
                         "pass a trace written by Proton's instrumentation backend")
    stack = _stack(ev)
    kernel = stack[-1] if stack else (m.group("kernel") or str(ev.get("cat")))
    return {"kernel": kernel, "sm": m.group("sm"), "cta": m.group("cta"),
            "warp": w.group("warp")}


def _event_label(i: int) -> str:
    return f"traceEvents[{i}]"


def _times(path: Path, i: int, ev: dict[str, Any]) -> tuple[int, int]:
    """Checked ``ts`` and ``dur`` of an event, in ns."""
    where = f"traceEvents[{i}]"
    ts = checked_ns(path, where, "ts", ev.get("ts"))
    dur = checked_ns(path, where, "dur", ev.get("dur"))
    interval(path, where, ts, ts + dur)
    return ts, dur


def _frequency(path: Path, i: int, ev: dict[str, Any]) -> Decimal:
    f = (ev.get("args") or {}).get("Frequency (MHz)")
    if f is not None:
        measurement(path, f"traceEvents[{i}]", "Frequency (MHz)", f)
    if f is None or Decimal(f) <= 0:
        raise InputError(str(path), f"traceEvents[{i}] has no 'Frequency (MHz)'",
                         "pass a trace written by Proton's instrumentation backend (it states "
                         "the frequency it converted cycles with)")
    return Decimal(f)
