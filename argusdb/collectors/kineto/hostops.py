"""Which call and host op launched each kernel: correlation ID → runtime call → ``cpu_op``.

A Kineto kernel event carries the CUPTI ``correlation`` of the runtime or driver call that
launched it (``cudaLaunchKernel``, ``cuLaunchKernel`` for Triton, ...), and that call is an
event of its own on the launching thread. The host op is the innermost ``cpu_op`` of the same
process and thread whose interval holds the call's start. This works for every Kineto version,
also the older ones where a kernel's ``External id`` is a copy of its correlation ID rather
than the ID of a ``cpu_op`` (``benchmark_result_493459``).

The call itself (start, duration, process and thread, its index in ``traceEvents``) is kept
too, for the kernel's ``api_*`` columns: the launch slice a timeline draws the flow arrow from.

Memory: the index keeps seven 8-byte integers per runtime call and four per ``cpu_op`` (compact
``array`` storage, numpy at resolution) plus each distinct name once. That is linear in the
number of such events, 56 or 32 bytes each against several hundred bytes per event in the JSON,
and independent of everything else the trace holds (arguments, shapes, stacks). Resolved, it
keeps only the calls that launched a kernel (``keep``), and the reader lets the raw index go
(``collectors.kineto.trace``).

Example:
    >>> ix = LaunchIndex()
    >>> ix.add_cpu_op(1, 1, 0, 100, "aten::mm")
    >>> ix.add_runtime(1, 1, 10, 7, "cudaLaunchKernel", dur_ns=4, src_row=3)
    >>> found = ix.resolve().lookup([7, 8])
    >>> found.host_op, found.launch_api, found.api_start_ns, found.api_src_row
    (['aten::mm', None], ['cudaLaunchKernel', None], [10, None], [3, None])
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class LaunchIndex:
    """Runtime calls and CPU ops gathered while scanning a trace."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._threads: dict[tuple[Hashable, Hashable], int] = {}
        self._rt = {k: array("q") for k in ("thread", "ts", "corr", "name", "dur", "src",
                                            "thread_no")}
        #: (pid, tid) of each thread number, for the stored call.
        self._thread_ids: list[tuple[Hashable, Hashable]] = []
        self._op = {k: array("q") for k in ("thread", "ts", "end", "name")}

    def _name(self, name: str) -> int:
        return self._names.setdefault(name, len(self._names))

    def _thread(self, pid: Hashable, tid: Hashable) -> int:
        n = self._threads.setdefault((pid, tid), len(self._threads))
        if n == len(self._thread_ids):
            self._thread_ids.append((pid, tid))
        return n

    def add_runtime(self, pid: Hashable, tid: Hashable, ts_ns: int, corr: int, name: str,
                    dur_ns: int = 0, src_row: int = -1) -> None:
        """A ``cuda_runtime``/``cuda_driver`` call with its correlation ID, duration and its
        index ``src_row`` in ``traceEvents``."""
        th = self._thread(pid, tid)
        for k, v in (("thread", th), ("ts", ts_ns), ("corr", corr), ("name", self._name(name)),
                     ("dur", dur_ns), ("src", src_row), ("thread_no", th)):
            self._rt[k].append(v)

    def add_cpu_op(self, pid: Hashable, tid: Hashable, ts_ns: int, end_ns: int,
                   name: str) -> None:
        """A ``cpu_op`` interval ``[ts_ns, end_ns]`` on a thread."""
        for k, v in (("thread", self._thread(pid, tid)), ("ts", ts_ns), ("end", end_ns),
                     ("name", self._name(name))):
            self._op[k].append(v)

    @property
    def n_runtime(self) -> int:
        return len(self._rt["corr"])

    def resolve(self, keep: np.ndarray | None = None) -> ResolvedLaunches:
        """Assign each runtime call its innermost enclosing ``cpu_op`` (by shortest interval).

        ``keep``: correlation IDs (the kernels'); only the calls with one of them are kept for
        :meth:`ResolvedLaunches.lookup` (a trace's memcpy, sync and allocation calls are most of
        its runtime calls). None keeps all.
        """
        rt = {k: np.frombuffer(v, dtype=np.int64) if len(v) else np.zeros(0, np.int64)
              for k, v in self._rt.items()}
        op = {k: np.frombuffer(v, dtype=np.int64) if len(v) else np.zeros(0, np.int64)
              for k, v in self._op.items()}
        host = np.full(len(rt["corr"]), -1, dtype=np.int64)
        for th in np.unique(rt["thread"]):
            r_idx = np.nonzero(rt["thread"] == th)[0]
            r_idx = r_idx[np.argsort(rt["ts"][r_idx], kind="stable")]
            r_ts = rt["ts"][r_idx]
            o_idx = np.nonzero(op["thread"] == th)[0]
            if not len(o_idx):
                continue
            # Longest first: a shorter (inner) op assigned later overwrites its parent.
            dur = op["end"][o_idx] - op["ts"][o_idx]
            o_idx = o_idx[np.argsort(-dur, kind="stable")]
            lo = np.searchsorted(r_ts, op["ts"][o_idx], side="left")
            hi = np.searchsorted(r_ts, op["end"][o_idx], side="right")
            for k in np.nonzero(hi > lo)[0]:
                host[r_idx[lo[k]:hi[k]]] = op["name"][o_idx[k]]
        order = np.argsort(rt["corr"], kind="stable")
        if keep is not None:
            order = order[np.isin(rt["corr"][order], keep)]
        return ResolvedLaunches({k: v[order] for k, v in rt.items()}, host[order],
                                list(self._names), self._thread_ids)


@dataclass
class LaunchColumns:
    """The ``kernel_launch`` columns of the launching call, one entry per looked-up kernel."""

    host_op: list[str | None] = field(default_factory=list)
    launch_api: list[str | None] = field(default_factory=list)
    api_start_ns: list[int | None] = field(default_factory=list)
    api_dur_ns: list[int | None] = field(default_factory=list)
    api_pid: list[int | None] = field(default_factory=list)
    api_tid: list[int | None] = field(default_factory=list)
    api_src_row: list[int | None] = field(default_factory=list)

    def columns(self) -> dict[str, list[Any]]:
        """Column name → values, as :func:`collectors.base.kernel_launch_batch` takes them."""
        return dict(vars(self))


def _int_id(v: Hashable) -> int | None:
    """A process or thread ID as an integer; None for Kineto's string labels."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class ResolvedLaunches:
    """Correlation ID → the launching call (API, host op, time, thread), a batch at a time."""

    def __init__(self, rt: dict[str, np.ndarray], host: np.ndarray, names: list[str],
                 threads: list[tuple[Hashable, Hashable]]) -> None:
        self._rt, self._host, self._names, self._threads = rt, host, names, threads
        self._corr = rt["corr"]

    def lookup(self, corrs: Sequence[int | None]) -> LaunchColumns:
        """The launching call per correlation ID (``None`` where the trace has none)."""
        out = LaunchColumns()
        cols = list(vars(out).values())
        if not len(self._corr):
            for c in cols:
                c.extend([None] * len(corrs))
            return out
        keys = np.array([-1 if c is None else c for c in corrs], dtype=np.int64)
        pos = np.searchsorted(self._corr, keys)
        pos_c = np.minimum(pos, len(self._corr) - 1)
        found = self._corr[pos_c] == keys
        for ok, p in zip(found.tolist(), pos_c.tolist(), strict=True):
            if not ok:
                for c in cols:
                    c.append(None)
                continue
            h = int(self._host[p])
            pid, tid = self._threads[int(self._rt["thread_no"][p])]
            out.host_op.append(self._names[h] if h >= 0 else None)
            out.launch_api.append(self._names[int(self._rt["name"][p])])
            out.api_start_ns.append(int(self._rt["ts"][p]))
            out.api_dur_ns.append(int(self._rt["dur"][p]))
            out.api_pid.append(_int_id(pid))
            out.api_tid.append(_int_id(tid))
            src = int(self._rt["src"][p])
            out.api_src_row.append(src if src >= 0 else None)
        return out
