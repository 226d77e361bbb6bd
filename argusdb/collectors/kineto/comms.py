"""Collectives, steps and host ops of a Kineto trace, for ``collective`` and ``trace_span``.

- NCCL: each ``kernel`` event whose args carry ``Collective name`` (torch ≥ 2.x writes them with
  ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``dtype``, ``Process Group Name`` and
  ``Process Group Ranks``) is one instance, timed by the kernel (clock ``device``). An NCCL kernel
  without those args (a CUDA-activity-only trace) is one too, its op read from the kernel name,
  group ``'?'``, size unknown.
- gloo: the ``gloo:<op>`` annotations of gloo's worker threads are the instances (clock
  ``host``); sizes come from the matching ``c10d::<op>`` host op (same op, same order): its
  ``Input Dims`` and ``Input type``.
- ``seq``: torch 2.11 writes no sequence number, so instances are numbered per group in start
  order (barriers included, as the process group counts them).
- Spans: ``cpu_op`` events → ``host_op`` (role ``host``); ``user_annotation`` → ``annotation``
  (``step`` when named like the step mark); ``gpu_user_annotation`` → device ``span`` (role
  ``compute``) or device ``step``; NCCL/gloo annotations are left to the collectives.

Memory: every span must be seen before the first is written (rows go out sorted by start, and
steps and ``seq`` are numbered in that order), so :class:`collectors.comms.DistRows` holds them
column-wise in Arrow, ~60 bytes a span (a 1 GB trace has ~1.4 M host ops), and sorts and
numbers them with NumPy; only the gloo annotations and ``c10d::`` ops (a few per collective)
are kept as dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argusdb.collectors.chrome import iter_events, us_to_ns
from argusdb.collectors.comms import (
    DistRows,
    elem_bytes,
    message_bytes,
    nccl_kernel_op,
    normalize_op,
)

STEP_MARK = "step"
_COMM_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms")


def _nelems(dims: Any) -> int | None:
    """Element count of the first tensor of a Kineto ``Input Dims`` entry (tensor or list)."""
    if isinstance(dims, list) and dims and isinstance(dims[0], list):
        dims = dims[0]
    if isinstance(dims, list) and all(isinstance(d, int) for d in dims):
        n = 1
        for d in dims:
            n *= d
        return n
    return None


def read_comms(path: Path, rank: int | None, step_mark: str = STEP_MARK) -> DistRows:
    """One pass over the trace: the rank's collectives and spans (see module docstring)."""
    rows = DistRows(rank)
    gloo: list[dict[str, Any]] = []
    c10d: list[dict[str, Any]] = []
    for _, ev in iter_events(path, "Kineto trace"):
        if ev.get("ph") != "X":
            continue
        cat, name = ev.get("cat"), ev.get("name")
        a, d = us_to_ns(ev.get("ts")), us_to_ns(ev.get("dur"))
        if not isinstance(name, str) or a is None or d is None:
            continue
        args = ev.get("args") or {}
        track = f"stream:{args['stream']}" if "stream" in args else f"thread:{ev.get('tid')}"
        if cat == "kernel":
            op = args.get("Collective name")
            kop = nccl_kernel_op(name)
            if op is None and kop is None:
                continue
            ranks = args.get("Process Group Ranks")
            in_n, out_n = args.get("In msg nelems"), args.get("Out msg nelems")
            eb = elem_bytes(args.get("dtype"))
            rows.add_collective(
                pg=str(args.get("Process Group Name", "?")),
                pg_ranks=None if ranks is None else str(ranks), seq=None,
                op=normalize_op(str(op)) if op is not None else kop, dtype=args.get("dtype"),
                elem_bytes=eb, in_nelems=in_n, out_nelems=out_n,
                group_size=args.get("Group size"), bytes=message_bytes(in_n, out_n, eb),
                start_ns=a, end_ns=a + d, clock="device", track=track, kernel=name, step=None)
        elif cat == "user_annotation" and name.startswith("gloo:"):
            gloo.append({"op": normalize_op(name), "a": a, "b": a + d, "track": track})
        elif cat == "cpu_op" and name.startswith("c10d::"):
            c10d.append({"op": normalize_op(name), "a": a, "args": args})
            rows.add_span(kind="host_op", role="host", name=name, track=track, step=None,
                          start_ns=a, end_ns=a + d, clock="host")
        elif cat in ("cpu_op", "user_annotation") and name != "record_param_comms":
            is_step = cat == "user_annotation" and name == step_mark
            rows.add_span(kind="step" if is_step else ("host_op" if cat == "cpu_op"
                                                      else "annotation"),
                          role="step" if is_step else "host", name=name, track=track,
                          step=None, start_ns=a, end_ns=a + d, clock="host")
        elif cat == "gpu_user_annotation" and not name.startswith(_COMM_PREFIXES):
            is_step = name == step_mark
            rows.add_span(kind="step" if is_step else "span",
                          role="step" if is_step else "compute", name=name, track=track,
                          step=None, start_ns=a, end_ns=a + d, clock="device")
    _gloo_instances(rows, gloo, c10d)
    rows.number(seq_given=False)
    return rows


def _gloo_instances(rows: DistRows, gloo: list[dict[str, Any]],
                    c10d: list[dict[str, Any]]) -> None:
    """gloo worker annotations as instances, sized by the k-th c10d op of the same op."""
    issued: dict[str, list[dict[str, Any]]] = {}
    for c in sorted(c10d, key=lambda c: c["a"]):
        issued.setdefault(c["op"], []).append(c)
    used: dict[str, int] = {}
    for g in sorted(gloo, key=lambda g: g["a"]):
        k = used.get(g["op"], 0)
        used[g["op"]] = k + 1
        src = issued.get(g["op"], [])
        args = src[k]["args"] if k < len(src) else {}
        dims = args.get("Input Dims") or []
        types = args.get("Input type") or []
        eb = elem_bytes(types[0]) if types and isinstance(types[0], str) else None
        if g["op"] == "allgather" and len(dims) >= 2:
            out_n, in_n = _nelems(dims[0]), _nelems(dims[1])
        elif g["op"] == "barrier":
            in_n = out_n = 0
        else:
            in_n = out_n = _nelems(dims[0]) if dims else None
        if types and types[0] == "TensorList":
            eb = None  # the element type of a tensor list is not written
        rows.add_collective(pg="?", pg_ranks=None, seq=None, op=g["op"],
                            dtype=types[0] if types else None, elem_bytes=eb,
                            in_nelems=in_n, out_nelems=out_n, group_size=None,
                            bytes=message_bytes(in_n, out_n, eb), start_ns=g["a"],
                            end_ns=g["b"], clock="host", track=g["track"], kernel=None,
                            step=None)
