"""Which host op launched each kernel: correlation ID → runtime call → enclosing ``cpu_op``.

A Kineto kernel event carries the CUPTI ``correlation`` of the runtime or driver call that
launched it (``cudaLaunchKernel``, ``cuLaunchKernel`` for Triton, ...), and that call is an
event of its own on the launching thread. The host op is the innermost ``cpu_op`` of the same
process and thread whose interval holds the call's start. This works for every Kineto version,
also the older ones where a kernel's ``External id`` is a copy of its correlation ID rather
than the ID of a ``cpu_op`` (``benchmark_result_493459``).

Memory: the index keeps four 8-byte integers per runtime call and per ``cpu_op`` (compact
``array`` storage, numpy at resolution) plus each distinct name once. That is linear in the
number of such events, about 32 bytes each against several hundred bytes per event in the JSON,
and independent of everything else the trace holds (arguments, shapes, stacks). It is the only
part of ingest that grows with the trace; the rest is bounded by the batch size.

Example:
    >>> ix = LaunchIndex()
    >>> ix.add_cpu_op(1, 1, 0, 100, "aten::mm")
    >>> ix.add_runtime(1, 1, 10, 7, "cudaLaunchKernel")
    >>> ix.resolve().lookup([7])
    (['aten::mm'], ['cudaLaunchKernel'])
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence

import numpy as np


class LaunchIndex:
    """Runtime calls and CPU ops gathered while scanning a trace."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._threads: dict[tuple[Hashable, Hashable], int] = {}
        self._rt = {k: array("q") for k in ("thread", "ts", "corr", "name")}
        self._op = {k: array("q") for k in ("thread", "ts", "end", "name")}

    def _name(self, name: str) -> int:
        return self._names.setdefault(name, len(self._names))

    def _thread(self, pid: Hashable, tid: Hashable) -> int:
        return self._threads.setdefault((pid, tid), len(self._threads))

    def add_runtime(self, pid: Hashable, tid: Hashable, ts_ns: int, corr: int, name: str) -> None:
        """A ``cuda_runtime``/``cuda_driver`` call with its correlation ID."""
        for k, v in (("thread", self._thread(pid, tid)), ("ts", ts_ns), ("corr", corr),
                     ("name", self._name(name))):
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

    def resolve(self) -> ResolvedLaunches:
        """Assign each runtime call its innermost enclosing ``cpu_op`` (by shortest interval)."""
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
        names = list(self._names)
        return ResolvedLaunches(rt["corr"][order], host[order], rt["name"][order], names)


class ResolvedLaunches:
    """Correlation ID → (host op, launch API), looked up a batch at a time."""

    def __init__(self, corr: np.ndarray, host: np.ndarray, api: np.ndarray,
                 names: list[str]) -> None:
        self._corr, self._host, self._api, self._names = corr, host, api, names

    def lookup(self, corrs: Sequence[int | None]) -> tuple[list[str | None], list[str | None]]:
        """Host op and API name per correlation ID (``None`` where the trace has none)."""
        hosts: list[str | None] = []
        apis: list[str | None] = []
        if not len(self._corr):
            return [None] * len(corrs), [None] * len(corrs)
        keys = np.array([-1 if c is None else c for c in corrs], dtype=np.int64)
        pos = np.searchsorted(self._corr, keys)
        pos_c = np.minimum(pos, len(self._corr) - 1)
        found = self._corr[pos_c] == keys
        for ok, p in zip(found.tolist(), pos_c.tolist(), strict=True):
            if not ok:
                hosts.append(None)
                apis.append(None)
                continue
            h = int(self._host[p])
            hosts.append(self._names[h] if h >= 0 else None)
            apis.append(self._names[int(self._api[p])])
        return hosts, apis
