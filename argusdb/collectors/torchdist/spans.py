"""Reader for ``*.spans.jsonl`` of the argusdb recorder (one rank of a torchrun launch).

Line 1 is the header (``kind: ARGUS_SPANS``: rank, world size, launch group, device, clock,
mode); each further line is a ``SPAN`` with ``role`` ``step``, ``compute`` or
``communication`` and ``start_ns``/``end_ns`` on the rank's clock (CUDA events: ns since the
rank's first event; CPU: ``perf_counter_ns`` since the first span). Communication spans carry
op, process group (name, ranks), the group's sequence number, element counts and dtype.

Interference: ``cuda_events`` only (timing-clean) in mode ``events``; mode ``forced`` is a
forced-wait variant (collectives forced synchronous), not timing-clean.

Example:
    >>> art = SpansReader().read(Path("tp_block.rank0.spans.jsonl.gz"))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import Artefact, Interference, json_lines, normalize_target
from argusdb.collectors.comms import DistRows, elem_bytes, message_bytes, normalize_op
from argusdb.errors import InputError

ADAPTER_VERSION = "torchdist.spans/1"
_ROLES = ("step", "compute", "communication")
_REMEDY = "pass a spans file written by argusdb.observe.launch.recorder"


class SpansReader:
    """``*.spans.jsonl``: the argusdb recorder's spans of one rank."""

    kind = "torchdist.spans_jsonl"

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.lstrip().split(b"\n", 1)[0]
        return first.startswith(b"{") and b'"ARGUS_SPANS"' in first

    def read(self, path: Path) -> Artefact:
        head: dict[str, Any] | None = None
        rows = DistRows(None)
        for i, rec in json_lines(path, _REMEDY):
            if head is None:
                if rec.get("kind") != "ARGUS_SPANS":
                    raise InputError(str(path), "line 1 is not an ARGUS_SPANS header", _REMEDY)
                head = rec
                rows.rank = _int(rec.get("rank"), path, "rank")
                continue
            self._span(path, i, rec, rows, head)
        if head is None:
            raise InputError(str(path), "is empty", "record the launch again")
        if not rows.collectives and not rows.spans:
            raise InputError(str(path), "has a header but no spans",
                             "the program marked no 'step' ranges and called no collectives; "
                             "check ARGUS_STEP_MARK and that it ran to the end")
        rows.number(seq_given=True)
        forced = bool(head.get("forced_wait"))
        clock = str(head.get("clock"))
        launch = {"rank": rows.rank, "world_size": head.get("world_size"),
                  "launch_group": head.get("launch_group"),
                  "device_index": head.get("device_index")}
        keep = ("mode", "clock", "backend", "torch", "argv", "step_mark", "local_rank",
                "started_unix_s", "target")
        meta: dict[str, Any] = {k: head[k] for k in keep if k in head}
        meta["spans"] = len(rows.spans)
        meta["collectives"] = len(rows.collectives)
        return Artefact(
            path=str(path), collector="torchdist", kind=self.kind,
            tool="argusdb.distributed recorder", adapter_version=ADAPTER_VERSION,
            tool_version=str(head.get("format")), batches=lambda: rows.batches(0),
            interference=Interference(forced_wait=forced, clock_control=None),
            device={"name": head["device"]} if head.get("device") else {},
            target=normalize_target(head.get("target")),
            meta={**meta, "timing": "cuda_events" if clock == "cuda_event" else "host_clock"},
            launch=launch)

    def _span(self, path: Path, i: int, rec: dict[str, Any], rows: DistRows,
              head: dict[str, Any]) -> None:
        role = rec.get("role")
        if rec.get("kind") != "SPAN" or role not in _ROLES:
            raise InputError(str(path), f"line {i + 1}: expected a SPAN with role in {_ROLES}",
                             "pass a spans file written by argusdb.observe.launch.recorder")
        a, b = _int(rec.get("start_ns"), path, "start_ns"), _int(rec.get("end_ns"), path, "end_ns")
        if a is None or b is None or b < a:
            raise InputError(str(path), f"line {i + 1}: start_ns/end_ns missing or reversed",
                             "record the launch again")
        clock = "cuda_event" if head.get("clock") == "cuda_event" else "host"
        step = rec.get("step") if isinstance(rec.get("step"), int) and rec["step"] >= 0 else None
        if role == "communication":
            eb = rec.get("elem_bytes") if isinstance(rec.get("elem_bytes"), int) else \
                elem_bytes(rec.get("dtype"))
            ranks = rec.get("pg_ranks")
            rows.add_collective(
                pg=str(rec.get("pg", "?")), pg_ranks=None if ranks is None else str(ranks),
                seq=_int(rec.get("seq"), path, "seq"), op=normalize_op(str(rec.get("op"))),
                dtype=rec.get("dtype"), elem_bytes=eb, in_nelems=rec.get("in_nelems"),
                out_nelems=rec.get("out_nelems"),
                group_size=len(ranks) if isinstance(ranks, list) else None,
                bytes=message_bytes(rec.get("in_nelems"), rec.get("out_nelems"), eb),
                start_ns=a, end_ns=b, clock=clock, track=rec.get("track"), kernel=None,
                step=step)
        else:
            rows.add_span(kind="step" if role == "step" else "span", role=role,
                          name=str(rec.get("name")), track=rec.get("track"),
                          step=step, start_ns=a, end_ns=b, clock=clock)


def _int(v: Any, path: Path, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(str(path), f"{what} is {v!r}, not an integer", "record the launch again")
    return v


__all__ = ["SpansReader", "pa"]
