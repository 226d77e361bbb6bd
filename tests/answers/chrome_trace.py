"""A structural validator of Chrome trace event JSON, as the exports write it.

Perfetto's own trace processor cannot run here (the ``perfetto`` package downloads its
``trace_processor_shell`` binary at run time; see the README's exports section), so the tests
check the Trace Event Format's rules for the phases argusdb writes and bind flow events to
slices the way the format defines it (and Perfetto's JSON importer follows): a flow start
(``ph: "s"``) binds to the innermost slice open on its thread at its ``ts``; a flow end
(``ph: "f"``) with ``bp: "e"`` binds to the innermost slice enclosing its ``ts`` on its thread.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: Phases the exports write: complete slices, metadata, flow start and flow end.
PHASES = ("X", "M", "s", "f")


def check_chrome_trace(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules of the Trace Event Format (JSON object form) for the phases we write; returns
    the complete (``X``) events."""
    assert isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in ("ms", "ns")
    complete = []
    flows: dict[Any, list[str]] = defaultdict(list)
    for ev in doc["traceEvents"]:
        assert isinstance(ev["name"], str) and ev["ph"] in PHASES, ev
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int), ev
        if ev["ph"] == "X":
            assert isinstance(ev["ts"], float | int) and isinstance(ev["dur"], float | int)
            assert ev["ts"] >= 0 and ev["dur"] >= 0
            complete.append(ev)
        elif ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name") and "name" in ev["args"]
        else:
            assert isinstance(ev["id"], int) and isinstance(ev["cat"], str), ev
            assert isinstance(ev["ts"], float | int) and ev["ts"] >= 0, ev
            assert ev["ph"] == "s" or ev.get("bp") == "e", ev  # ends bind to their slice
            flows[(ev["cat"], ev["id"])].append(ev["ph"])
    # each flow is one start and one end (the format's v1 flows: s, then f; no steps written)
    assert all(sorted(p) == ["f", "s"] for p in flows.values()), flows
    return complete


def enclosing(slices: list[dict[str, Any]], ts: float) -> dict[str, Any] | None:
    """The innermost slice of one thread whose interval holds ``ts`` (ends included)."""
    holding = [e for e in slices if e["ts"] <= ts <= e["ts"] + e["dur"]]
    return min(holding, key=lambda e: e["dur"]) if holding else None


def bind_flows(doc: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(start slice, end slice) of every flow, bound as the format says; a flow whose end does
    not fall inside a slice of its thread fails."""
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for ev in doc["traceEvents"]:
        if ev["ph"] == "X":
            by_thread[(ev["pid"], ev["tid"])].append(ev)
    ends: dict[tuple[str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for ev in doc["traceEvents"]:
        if ev["ph"] in ("s", "f"):
            ends[(ev["cat"], ev["id"])][ev["ph"]] = ev
    out = []
    for key, pair in sorted(ends.items()):
        src = enclosing(by_thread[(pair["s"]["pid"], pair["s"]["tid"])], pair["s"]["ts"])
        dst = enclosing(by_thread[(pair["f"]["pid"], pair["f"]["tid"])], pair["f"]["ts"])
        assert src is not None and dst is not None, f"flow {key} binds to no slice: {pair}"
        out.append((src, dst))
    return out
