"""Per-rank collection runtime for multi-process programs (``torchrun`` ranks).

Installed in every rank before the program runs (see :mod:`argusdb.observe.launch.rank_boot`), it
records without editing the program, in one of three modes (``ARGUS_DIST_MODE``):

- ``events`` (timing-clean): CUDA events (on a CPU-only rank: ``time.perf_counter_ns``, the
  process runs synchronously) around the program's ``torch.profiler.record_function`` ranges
  (a range named like ``ARGUS_STEP_MARK``, default ``step``, is a step; any other is a compute
  span of that name) and around the ``torch.distributed`` collectives it calls (op, group name and
  ranks, the process group's sequence number, element counts, dtype). Events are recorded on the
  stream current at the call: a synchronous collective's span starts when that stream reaches
  it and ends when the stream may continue (the collective is complete on this rank); for
  ``async_op=True`` the span ends when the program waits for the work. Written as
  ``<stem>.rank<R>.spans.jsonl`` (``argusdb/collectors/torchdist``).
- ``forced``: as ``events``, and each collective is forced synchronous: the device is drained
  before it and the host waits for it after it, so no compute overlaps it (a perturbed variant:
  the run is marked ``forced_wait``).
- ``profiler``: torch.profiler (CPU and CUDA activities, shapes) over the whole program,
  exported per rank as ``<stem>.rank<R>.kineto.json.gz`` with an ``argusLaunch`` object (rank,
  world size, launch group, mode) beside Kineto's own keys. Not timing-clean (host-op tracing).
- ``cupti``: the same export with the CUDA activity only (CUPTI kernel, memcpy and runtime
  records, no host ops): kernel intervals, NCCL kernels included, under activity tracing only.

Example:
    ARGUS_DIST_MODE=events ARGUS_DIST_OUT=out ARGUS_LAUNCH_GROUP=lg1 \\
      torchrun --nproc-per-node 2 -m argusdb.observe.launch.rank_boot prog.py
"""

from __future__ import annotations

import atexit
import gzip
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argusdb import environment

#: Collectives of ``torch.distributed`` the recorder wraps: name → (input arg, output arg) index
#: of the tensors whose element counts are the 'in' and 'out' message sizes.
COLLECTIVES: dict[str, tuple[int, int]] = {
    "all_reduce": (0, 0), "broadcast": (0, 0), "reduce": (0, 0),
    "all_gather_into_tensor": (1, 0), "reduce_scatter_tensor": (1, 0),
    "all_to_all_single": (1, 0),
}
MODES = ("events", "forced", "cupti", "profiler")
SPANS_FORMAT = "argus.spans/1"


@dataclass
class _Open:
    """A span whose end is not recorded yet."""

    rec: dict[str, Any]
    start: Any


class _Waited:
    """An ``async_op`` collective's Work as the program sees it: ``wait()`` waits for the Work
    and then records the end of the collective's span (the first time only)."""

    def __init__(self, work: Any, ended: Any) -> None:
        self._work, self._ended, self._done = work, ended, False

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        r = self._work.wait(*args, **kwargs)
        if not self._done:
            self._done = True
            self._ended()
        return r

    def __getattr__(self, name: str) -> Any:
        return getattr(self._work, name)


@dataclass
class Recorder:
    """Spans of one rank, timed by CUDA events (GPU) or the monotonic clock (CPU)."""

    out: Path
    stem: str
    mode: str
    launch_group: str
    step_mark: str = "step"
    spans: list[tuple[dict[str, Any], Any, Any]] = field(default_factory=list)
    _stack: list[_Open] = field(default_factory=list)
    _origin: Any = None
    _cuda: bool = False
    _seq: dict[str, int] = field(default_factory=dict)
    _step: int = -1
    _t0_wall: float = 0.0
    _backend: str | None = None

    # -- clock ---------------------------------------------------------------------------
    def _stamp(self) -> Any:
        import torch
        if self._origin is None:
            self._cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
            if self._cuda:
                self._origin = torch.cuda.Event(enable_timing=True)
                self._origin.record()
            else:
                self._origin = time.perf_counter_ns()
            self._t0_wall = time.time()
        if self._cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter_ns()

    def _ns(self, stamp: Any) -> int:
        if self._cuda:
            return round(self._origin.elapsed_time(stamp) * 1e6)
        return int(stamp - self._origin)

    def _track(self) -> str:
        import torch
        if self._cuda:
            s = torch.cuda.current_stream()
            return f"stream:{s.stream_id}"
        return "host"

    # -- record_function ranges ----------------------------------------------------------
    def range_enter(self, name: str) -> None:
        role = "step" if name == self.step_mark else "compute"
        if role == "step":
            self._step += 1
        start = self._stamp()  # first: it decides the clock the track is named on
        self._stack.append(_Open({"kind": "SPAN", "role": role, "name": name,
                                  "track": self._track(), "step": self._step}, start))

    def range_exit(self) -> None:
        if self._stack:
            op = self._stack.pop()
            self.spans.append((op.rec, op.start, self._stamp()))

    # -- collectives -----------------------------------------------------------------------
    def collective(self, fn: Any, op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import torch
        import torch.distributed as dist
        i_in, i_out = COLLECTIVES[op]
        t_in = args[i_in] if len(args) > i_in else None
        t_out = args[i_out] if len(args) > i_out else None
        group = kwargs.get("group")
        pg = group if group is not None else dist.distributed_c10d._get_default_group()
        name = str(getattr(pg, "group_name", "0"))
        if self._backend is None:
            self._backend = str(dist.get_backend(pg))
        rec: dict[str, Any] = {
            "kind": "SPAN", "role": "communication", "name": op, "op": op,
            "pg": name, "pg_ranks": dist.get_process_group_ranks(pg),
            "dtype": str(getattr(t_in, "dtype", "")).replace("torch.", ""),
            "elem_bytes": int(t_in.element_size()) if t_in is not None else None,
            "in_nelems": int(t_in.numel()) if t_in is not None else None,
            "out_nelems": int(t_out.numel()) if t_out is not None else None,
            "async": bool(kwargs.get("async_op", False)), "step": self._step,
            "track": self._track()}
        if self.mode == "forced":
            (torch.cuda.synchronize() if self._cuda else None)
        start = self._stamp()
        work = fn(*args, **kwargs)
        try:  # the process group's own count, as Kineto's record_param_comms 'Seq' gives it
            rec["seq"] = int(pg._get_sequence_number_for_group()) - 1  # type: ignore[union-attr]
        except (AttributeError, RuntimeError):
            rec["seq"] = self._seq.setdefault(name, -1) + 1
        self._seq[name] = rec["seq"]
        if work is not None and rec["async"]:
            # torch's Work has a read-only wait: the program gets a proxy whose wait ends the
            # span (once), everything else goes to the Work itself
            return _Waited(work, lambda: self.spans.append((rec, start, self._stamp())))
        if self.mode == "forced" and self._cuda:
            torch.cuda.synchronize()
        self.spans.append((rec, start, self._stamp()))
        return work

    # -- output --------------------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        import torch
        dev_name, dev_index, target = None, None, None
        if self._cuda:
            dev_index = torch.cuda.current_device()
            dev_name = torch.cuda.get_device_name(dev_index)
            major, minor = torch.cuda.get_device_capability(dev_index)
            target = f"sm_{major}{minor}"
        backend = self._backend
        return {"kind": "ARGUS_SPANS", "format": SPANS_FORMAT, "mode": self.mode,
                "rank": int(os.environ.get("RANK", 0)),
                "world_size": int(os.environ.get("WORLD_SIZE", 1)),
                "local_rank": int(os.environ.get("LOCAL_RANK", 0)),
                "launch_group": self.launch_group, "device": dev_name,
                "device_index": dev_index, "target": target, "backend": backend,
                "clock": "cuda_event" if self._cuda else "perf_counter",
                "forced_wait": self.mode == "forced", "step_mark": self.step_mark,
                "torch": torch.__version__, "started_unix_s": self._t0_wall,
                "argv": [Path(sys.argv[0]).name, *sys.argv[1:]]}

    def write(self) -> Path:
        import torch
        if self._cuda:
            torch.cuda.synchronize()
        head = self.header()
        path = self.out / f"{self.stem}.rank{head['rank']}.spans.jsonl"
        self.out.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as fh:
            fh.write(json.dumps(head) + "\n")
            for rec, a, b in self.spans:
                fh.write(json.dumps({**rec, "start_ns": self._ns(a), "end_ns": self._ns(b)}) + "\n")
        return path


def install(mode: str, out: Path, stem: str, launch_group: str) -> Any:
    """Install the recorder of ``mode`` in this process; returns the recorder or profiler."""
    import torch
    import torch.distributed as dist
    if mode not in MODES:
        raise SystemExit(f"ARGUS_DIST_MODE={mode!r}: expected one of {', '.join(MODES)}")
    if mode in ("profiler", "cupti"):
        acts = [torch.profiler.ProfilerActivity.CPU] if mode == "profiler" else []
        if torch.cuda.is_available():
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        if not acts:
            raise SystemExit("ARGUS_DIST_MODE=cupti needs CUDA; use 'events' on a CPU")
        prof = torch.profiler.profile(record_shapes=mode == "profiler", activities=acts)
        prof.__enter__()

        def finish() -> None:
            prof.__exit__(None, None, None)
            rank = int(os.environ.get("RANK", 0))
            out.mkdir(parents=True, exist_ok=True)
            tmp = out / f".{stem}.rank{rank}.json"
            prof.export_chrome_trace(str(tmp))
            doc = json.loads(tmp.read_text())
            doc["argusLaunch"] = {"rank": rank, "world_size": int(os.environ.get("WORLD_SIZE", 1)),
                                  "local_rank": int(os.environ.get("LOCAL_RANK", 0)),
                                  "launch_group": launch_group, "mode": mode}
            with gzip.open(out / f"{stem}.rank{rank}.kineto.json.gz", "wt") as fh:
                json.dump(doc, fh)
            tmp.unlink()
        atexit.register(finish)
        return prof
    rec = Recorder(out, stem, mode, launch_group, environment.STEP_MARK.get() or "step")
    rf = torch.autograd.profiler.record_function
    enter, exit_ = rf.__enter__, rf.__exit__

    def rf_enter(self: Any) -> Any:
        r = enter(self)
        rec.range_enter(self.name)
        return r

    def rf_exit(self: Any, *exc: Any) -> Any:
        rec.range_exit()
        return exit_(self, *exc)
    rf.__enter__, rf.__exit__ = rf_enter, rf_exit  # type: ignore[method-assign]
    for op in COLLECTIVES:
        orig = getattr(dist, op)

        def wrapped(*args: Any, _orig: Any = orig, _op: str = op, **kwargs: Any) -> Any:
            return rec.collective(_orig, _op, args, kwargs)
        setattr(dist, op, wrapped)
    atexit.register(rec.write)
    return rec
