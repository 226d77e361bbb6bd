"""Exports to the tools engineers already use: Perfetto/Chrome trace, Hatchet, Parquet.

- :func:`perfetto_trace`: one or several runs as Chrome trace event JSON (what Perfetto UI and
  ``chrome://tracing`` open): one complete (``ph: "X"``) event per kernel launch on a track per
  device and stream, with the launch's region, configuration, host op and launch API in
  ``args``; the runtime or driver call that launched it on its host thread, with a flow arrow
  (``ph: "s"`` → ``ph: "f"``, ``bp: "e"``, category ``ac2g`` as Kineto writes it) from the call
  to the kernel; the run's host ops, annotations and steps on a track per host thread; and one
  per intra-kernel scope instance (Proton instrumentation, ``scope_event``) on a track per CTA
  (process ``<kernel> Core<sm> CTA<cta>``, as Proton names it) and warp.
- :func:`hatchet_literal`: a region tree (program → kernel → regions) of one version with one
  metric per signal, in Hatchet's literal format (``GraphFrame.from_literal``).
- :func:`parquet`: the answer of any checked query as a Parquet file.

All reads go through the checked query surface.

Example:
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     run = db.query("SELECT run_id FROM run WHERE collector = 'cupti' LIMIT 1")[0][0]
    ...     doc = perfetto_trace(db, run.as_py())
    >>> "X" in {e["ph"] for e in doc["traceEvents"]}
    True
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from argusdb.answers import stats
from argusdb.answers.select import VersionRef, cohorts, fetch_rows, lit, resolve_version
from argusdb.errors import UsageError

if TYPE_CHECKING:
    from argusdb.api import Connection

#: Preference among evidence classes when one metric per node must be chosen.
_CLASS_ORDER = {"observed": 0, "attributed": 1}


def _run(db: Connection, run_id: str) -> dict[str, Any]:
    rows = db.query(f"SELECT run_id, program_version, collector, kind, artefact_name, signature, "
                    f"device, json_extract_string(meta, '$.other_kernels.run_id') AS other_run "
                    f"FROM run "
                    f"WHERE starts_with(run_id, {lit(run_id)})").to_pylist()
    if len(rows) != 1:
        what = "no run" if not rows else f"{len(rows)} runs"
        raise UsageError(f"run {run_id!r} matches {what}; list runs with 'argus runs STORE'")
    return dict(rows[0])


def perfetto_trace(db: Connection, run_id: str | Sequence[str]) -> dict[str, Any]:
    """The kernel launches, host ops and intra-kernel scopes of runs as Chrome trace JSON.

    Each run is a group of processes of its own, named after the run (``run <id> (<artefact>)
    ...``): its devices (a thread per stream), its host processes and threads where the store
    holds the run's launching calls (``kernel_launch.api_*``) or host ops (``trace_span``:
    torch ops, annotations, steps, as Kineto traces of a distributed launch give them) and its
    Proton scope instances (a process per CTA, a thread per warp). Each kernel with a stored
    launching call gets one flow (a flow ``id`` of its own) whose start lies at the middle of
    the call's slice and whose end, bound to the enclosing slice, at the middle of the kernel's:
    both ends fall strictly inside their slices wherever these last 2 ns or more, so no viewer
    binds an end to a neighbour or a parent. Timestamps are microseconds (the format's unit)
    from the run's own first kernel, call or host op (runs come from different clocks), with
    the nanosecond originals in ``args``; ``displayTimeUnit`` is ``ns``. Scope instances keep
    their trace's own origin and nominal clock (see ``scope_event``), with their cycles and
    region in ``args``.

    Raises:
        UsageError: a run is unknown, or has neither kernel launches, host ops nor scope events.
    """
    ids = [run_id] if isinstance(run_id, str) else list(run_id)
    if not ids:
        raise UsageError("no run to export; name one or more with --run")
    events: list[dict[str, Any]] = []
    runs = []
    flow_ids = itertools.count(1)
    for rid in ids:
        run = _run(db, rid)
        runs.append(run)
        label = f"run {run['run_id'][:8]} ({run['artefact_name']})" if len(ids) > 1 else ""
        first = 1 + max((e["pid"] for e in events), default=-1)
        own = _run_events(db, run, first, label, flow_ids)
        if not own:
            raise UsageError(f"run {run['run_id']} ({run['artefact_name']}) has no kernel "
                             f"launches, host ops or scope events; export a run of a tracing "
                             f"collector (cupti, kineto, nsys) or of a Proton instrumentation "
                             f"trace")
        events += own
    other: dict[str, Any] = {"argusdb_run": runs[0]["run_id"], "signature": runs[0]["signature"],
                             "artefact": runs[0]["artefact_name"]} if len(runs) == 1 else {
        "argusdb_runs": [{"run_id": r["run_id"], "signature": r["signature"],
                          "artefact": r["artefact_name"]} for r in runs]}
    return {"displayTimeUnit": "ns", "traceEvents": events, "otherData": other}


def _run_events(db: Connection, run: dict[str, Any], first_pid: int, label: str,
                flow_ids: Iterator[int]) -> list[dict[str, Any]]:
    """One run's events, its processes numbered from ``first_pid``, flows from ``flow_ids``."""
    # The whole timeline of the artefact: a trace's kernels that are not the program's are a
    # timeline run of their own (run.meta.other_kernels; see argusdb.ingest).
    runs = ", ".join(lit(r) for r in (run["run_id"], run["other_run"]) if r)
    launches = db.query(
        f"SELECT k.kernel, k.launch, k.region_id, k.start_ns, k.end_ns, k.dur_ns, "
        f"k.correlation_id, k.host_op, k.launch_api, k.grid_x, k.grid_y, k.grid_z, k.block_x, "
        f"k.block_y, k.block_z, k.registers, k.shared_bytes, k.device_id, k.stream_id, "
        f"k.api_start_ns, k.api_dur_ns, k.api_pid, k.api_tid, k.api_src_row, "
        f"r.program_version, k.run_id "
        f"FROM kernel_launch AS k JOIN run AS r USING (run_id) "
        f"WHERE k.run_id IN ({runs}) ORDER BY k.start_ns").to_pylist()
    spans = db.query(
        f"SELECT kind, role, name, track, step, rank, start_ns, end_ns, dur_ns, clock "
        f"FROM trace_span WHERE run_id = {lit(run['run_id'])} AND clock = 'host' "
        f"ORDER BY start_ns").to_pylist()
    starts = [int(r["start_ns"]) for r in launches] + [int(r["start_ns"]) for r in spans] + [
        int(r["api_start_ns"]) for r in launches if r["api_start_ns"] is not None]
    t0 = min(starts) if starts else 0
    events = _launch_events(run, launches, t0, first_pid, label)
    host = _HostTracks(run, t0, 1 + max((e["pid"] for e in events), default=first_pid - 1),
                       label, launches, first_pid)
    events += host.spans(spans)
    events += host.calls(launches, flow_ids)
    events += host.names()
    events += _scope_events(db, run, 1 + max((e["pid"] for e in events),
                                             default=first_pid - 1))
    return events


def _us(ns: int) -> float:
    """Nanoseconds as the format's microseconds (exact: at most 3 decimals)."""
    return ns / 1000.0


def _device_pid(first_pid: int, r: dict[str, Any]) -> int:
    return first_pid + int(r["device_id"] or 0)


def call_slice(r: dict[str, Any], pid: int, tid: int, ts_us: float, run_id: str
               ) -> dict[str, Any]:
    """The launching call of a ``kernel_launch`` row (``api_*`` columns) as a slice, under
    Kineto's category for its API (``cuda_runtime`` or ``cuda_driver``)."""
    api = str(r["launch_api"] or "launch")
    start, dur = int(r["api_start_ns"]), int(r["api_dur_ns"] or 0)
    return {"name": api, "ph": "X", "pid": pid, "tid": tid,
            "cat": "cuda_runtime" if api.lstrip("_").startswith("cuda") else "cuda_driver",
            "ts": ts_us, "dur": _us(dur),
            "args": {"correlation": r["correlation_id"], "start_ns": start, "dur_ns": dur,
                     "src_row": r["api_src_row"], "run_id": run_id}}


def launch_flow(fid: int, call: tuple[int, int, float], kernel: tuple[int, int, float]
                ) -> list[dict[str, Any]]:
    """A flow from a point (pid, tid, ts in µs) inside a launching call's slice to a point
    inside its kernel's slice, bound to that enclosing slice (``ac2g``, as Kineto writes it)."""
    return [{"name": "ac2g", "cat": "ac2g", "ph": "s", "id": fid, "pid": call[0],
             "tid": call[1], "ts": call[2]},
            {"name": "ac2g", "cat": "ac2g", "ph": "f", "bp": "e", "id": fid, "pid": kernel[0],
             "tid": kernel[1], "ts": kernel[2]}]


class _HostTracks:
    """The host side of a run: a process per host process ID, a thread per traced thread.

    Launching calls carry their process and thread IDs (``kernel_launch.api_pid/api_tid``);
    host ops (``trace_span``) name only their thread, so they go to the process of the calls
    when the run's calls come from one process (a rank's trace), else to a process of their own.
    """

    def __init__(self, run: dict[str, Any], t0: int, first_pid: int, label: str,
                 launches: list[dict[str, Any]], device_pid0: int) -> None:
        self.run, self.t0, self.label = run, t0, label
        self.first_pid, self.device_pid0 = first_pid, device_pid0
        self.pids: dict[int | None, int] = {}
        self.threads: dict[tuple[int, int], str] = {}
        os_pids = {r["api_pid"] for r in launches if r["api_start_ns"] is not None}
        self.span_process = next(iter(os_pids)) if len(os_pids) == 1 else None

    def _pid(self, os_pid: int | None) -> int:
        if os_pid not in self.pids:
            self.pids[os_pid] = self.first_pid + len(self.pids)
        return self.pids[os_pid]

    def _tid(self, pid: int, tid: int, name: str) -> int:
        self.threads.setdefault((pid, tid), name)
        return tid

    def spans(self, spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Host ops, annotations and steps, on the thread each names."""
        events: list[dict[str, Any]] = []
        named: dict[str, int] = {}
        for r in spans:
            pid = self._pid(self.span_process)
            track = str(r["track"] or "host")
            if track not in named:
                digits = track.rsplit(":", 1)[-1]
                named[track] = int(digits) if digits.isdigit() else 1 + len(named)
            tid = self._tid(pid, named[track], track)
            events.append({
                "name": r["name"], "cat": r["kind"], "ph": "X", "pid": pid, "tid": tid,
                "ts": _us(int(r["start_ns"]) - self.t0), "dur": _us(int(r["dur_ns"])),
                "args": {"kind": r["kind"], "role": r["role"], "step": r["step"],
                         "rank": r["rank"], "start_ns": r["start_ns"], "dur_ns": r["dur_ns"],
                         "run_id": self.run["run_id"]}})
        return events

    def calls(self, launches: list[dict[str, Any]], flow_ids: Iterator[int]
              ) -> list[dict[str, Any]]:
        """Each launching call once (a graph launch starts several kernels), under Kineto's
        category for its API, and one flow per kernel from the call to the kernel."""
        events: list[dict[str, Any]] = []
        slices: dict[tuple[Any, ...], tuple[int, int, int]] = {}
        for r in launches:
            if r["api_start_ns"] is None:
                continue
            start, dur = int(r["api_start_ns"]), int(r["api_dur_ns"] or 0)
            key = (r["api_pid"], r["api_tid"], start, r["correlation_id"])
            if key not in slices:
                pid = self._pid(r["api_pid"])
                tid = self._tid(pid, int(r["api_tid"] or 0), f"thread:{r['api_tid']}")
                slices[key] = (pid, tid, start + dur // 2)
                events.append(call_slice(r, pid, tid, _us(start - self.t0),
                                         self.run["run_id"]))
            pid, tid, mid = slices[key]
            kernel_mid = int(r["start_ns"]) + int(r["dur_ns"] or 0) // 2
            events += launch_flow(next(flow_ids), (pid, tid, _us(mid - self.t0)),
                                  (_device_pid(self.device_pid0, r), int(r["stream_id"] or 0),
                                   _us(kernel_mid - self.t0)))
        return events

    def names(self) -> list[dict[str, Any]]:
        """Metadata events naming the host processes and threads."""
        events: list[dict[str, Any]] = []
        for os_pid, pid in self.pids.items():
            what = f"host pid {os_pid}" if os_pid is not None else "host"
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"name": f"{self.label} {what}".strip()}})
        for (pid, tid), name in self.threads.items():
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": name}})
        return events


def _launch_events(run: dict[str, Any], launches: list[dict[str, Any]], t0: int,
                   first_pid: int, label: str) -> list[dict[str, Any]]:
    """Kernel launches on one track per (device, stream), from the run's first event."""
    if not launches:
        return []
    events: list[dict[str, Any]] = []
    named: set[tuple[int, int]] = set()
    for r in launches:
        pid, tid = _device_pid(first_pid, r), int(r["stream_id"] or 0)
        if (pid, tid) not in named:
            named.add((pid, tid))
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": f"stream {tid}"}})
        events.append({
            "name": r["kernel"], "cat": "kernel", "ph": "X", "pid": pid, "tid": tid,
            "ts": (int(r["start_ns"]) - t0) / 1000.0, "dur": int(r["dur_ns"]) / 1000.0,
            # Launch facts under the names torch.profiler (Kineto) uses, so that readers of
            # Kineto traces (Perfetto, HTA, argusdb's kineto collector) find them.
            "args": {"device": pid - first_pid, "stream": tid,
                     "correlation": r["correlation_id"], "host_op": r["host_op"],
                     "launch_api": r["launch_api"],
                     "grid": [r["grid_x"], r["grid_y"], r["grid_z"]],
                     "block": [r["block_x"], r["block_y"], r["block_z"]],
                     "registers per thread": r["registers"],
                     "shared memory": r["shared_bytes"],
                     "region_id": r["region_id"], "launch": r["launch"],
                     "start_ns": r["start_ns"], "dur_ns": r["dur_ns"],
                     "program_version": r["program_version"], "run_id": r["run_id"]}})
    for pid in sorted({p for p, _ in named}):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"{label} {run['device'] or 'GPU'} "
                                        f"{pid - first_pid}".strip()}})
    return events


def _scope_events(db: Connection, run: dict[str, Any], first_pid: int) -> list[dict[str, Any]]:
    """Scope instances on one process per (kernel, SM, CTA) and one thread per warp.

    The format wants integer pids and tids: pids count up from ``first_pid`` (after the
    devices), tids are warp indices, and metadata events carry Proton's own labels.
    """
    rows = db.query(
        f"SELECT s.kernel, s.scope, s.scope_path, s.sm, s.cta, s.warp, s.start_ns, s.dur_ns, "
        f"s.cycles, s.src_row, r.region_id FROM scope_event AS s "
        f"LEFT JOIN region_span AS r ON r.program_version = {lit(run['program_version'])} "
        f"AND r.kernel = s.kernel AND r.name = s.scope "
        f"WHERE s.run_id = {lit(run['run_id'])} "
        f"ORDER BY s.kernel, s.sm::INTEGER, s.cta::INTEGER, s.warp::INTEGER, s.start_ns"
    ).to_pylist()
    events: list[dict[str, Any]] = []
    pids: dict[tuple[str, str, str], int] = {}
    named: set[tuple[int, int]] = set()
    for r in rows:
        where = (str(r["kernel"]), str(r["sm"]), str(r["cta"]))
        if where not in pids:
            pids[where] = pid = first_pid + len(pids)
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"name": f"{where[0]} Core{where[1]} CTA{where[2]}"}})
        pid, tid = pids[where], int(r["warp"])
        if (pid, tid) not in named:
            named.add((pid, tid))
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": f"warp {tid}"}})
        args: dict[str, Any] = {"cycles": r["cycles"], "scope_path": r["scope_path"],
                                "sm": int(r["sm"]), "cta": int(r["cta"]), "warp": tid,
                                "start_ns": r["start_ns"], "dur_ns": r["dur_ns"],
                                "src_row": r["src_row"], "run_id": run["run_id"]}
        if r["region_id"] is not None:
            args["region_id"] = r["region_id"]
        events.append({"name": r["scope"], "cat": "scope", "ph": "X", "pid": pid, "tid": tid,
                       "ts": int(r["start_ns"]) / 1000.0, "dur": int(r["dur_ns"]) / 1000.0,
                       "args": args})
    return events


def _pick(candidates: list[Any]) -> Any:
    """One cohort per (region, signal): observed before attributed, clean timing first."""
    return sorted(candidates, key=lambda c: (_CLASS_ORDER.get(c.key.evidence_class, 9),
                                             c.key.standing != "clean", c.key.standing))[0]


def hatchet_literal(db: Connection, version: str, program: str | None = None
                    ) -> list[dict[str, Any]]:
    """The region tree of one program version with per-signal medians, as a Hatchet literal.

    Nodes are the program (root), its kernels, their regions (from ``region_span``) and, per
    kernel with attributed evidence, ``_unattributed`` (the share attribution could not place
    in a region), so that a kernel's attributed children sum to its observed total; a kernel
    without evidence of its own for a signal its regions have carries their sum. Each
    node's metrics are the medians over repeats of its own evidence (observed preferred over
    attributed; derived values are left out: they are inferences, not measurements). A signal
    has one metric name on every level: ``"<signal> (<unit>)"``, or the bare signal when the
    evidence states no unit. Frames carry the region ID.

    Raises:
        UsageError: unknown version, or a version without region spans.
    """
    ref = resolve_version(db, version, f"{program}/x" if program else None)
    spans = db.query(f"SELECT region_id, kernel, name, start_line, end_line FROM region_span "
                     f"WHERE program_version = {lit(ref.program_version)} "
                     f"ORDER BY kernel, start_line").to_pylist()
    if not spans:
        raise UsageError(f"version {ref.program_version} has no regions (it was ingested "
                         f"without --program)")
    prog = str(spans[0]["region_id"]).split("/", 1)[0]
    kernels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in spans:
        kernels[str(s["kernel"])].append(s)
    units: dict[str, set[str]] = defaultdict(set)

    def metrics(region: str) -> dict[str, float]:
        found = cohorts(fetch_rows(db, region, VersionRef(ref.program_version, ref.label)))
        by_signal: dict[str, list[Any]] = defaultdict(list)
        for (_, sig, key), co in found.items():
            if key.evidence_class in _CLASS_ORDER:
                by_signal[sig].append(co)
        out: dict[str, float] = {}
        for sig, cands in sorted(by_signal.items()):
            co = _pick(cands)
            if co.unit:
                units[sig].add(str(co.unit))
            out[sig] = stats.summarize(co.samples).median
        return out

    def node(name: str, kind: str, region: str, lines: str | None,
             children: list[dict[str, Any]]) -> dict[str, Any]:
        frame = {"name": name, "type": kind, "region_id": region}
        if lines:
            frame["lines"] = lines
        return {"frame": frame, "metrics": metrics(region), "children": children}

    kernel_nodes = []
    for k, rs in kernels.items():
        kid = f"{prog}/{k}"
        subs = [node(str(r["name"]), "region", str(r["region_id"]),
                     f"{r['start_line']}-{r['end_line']}", [])
                for r in rs if r["region_id"] != kid]
        rest = node("_unattributed", "unattributed", f"{kid}/_unattributed", None, [])
        if rest["metrics"]:
            subs.append(rest)
        whole = next((r for r in rs if r["region_id"] == kid), None)
        lines = f"{whole['start_line']}-{whole['end_line']}" if whole else None
        kn = node(k, "kernel", kid, lines, subs)
        # Per-instruction evidence is keyed to regions only: the kernel's total of such a
        # signal is what its regions and _unattributed add up to (attribution conserves it).
        for sub in subs:
            for sig in sub["metrics"]:
                if sig not in kn["metrics"]:
                    kn["metrics"][sig] = sum(c["metrics"].get(sig, 0.0) for c in subs)
        kernel_nodes.append(kn)
    tree = node(prog, "program", prog, None, kernel_nodes)
    names = {sig: f"{sig} ({next(iter(u))})" if len(u) == 1 else sig
             for sig, u in units.items()}

    def rename(n: dict[str, Any]) -> None:
        n["metrics"] = {names.get(sig, sig): v for sig, v in n["metrics"].items()}
        for c in n["children"]:
            rename(c)

    rename(tree)
    # Nodes without evidence of a signal have no such metric: Hatchet shows NaN, never 0.
    return [tree]


def parquet(db: Connection, sql: str, out: str | Path) -> int:
    """Run a checked query and write its answer to ``out`` as Parquet; returns the row count.

    Raises:
        QueryRefused: the checker refused the query (nothing is written).
    """
    table = db.query(sql)
    pq.write_table(table, str(out))
    return table.num_rows
