"""Large Kineto traces made of a real one: every event replicated N times, shifted in time.

Replica ``r`` of an event has ``ts + r * span`` (``span`` = the source trace's length plus a
gap), and its correlation IDs, flow IDs and External ids shifted past those of replica
``r - 1``, so host-op linkage stays one-to-one and launch indices keep counting. The file is
written event by event: the generator never holds the big trace either.

Example:
    >>> stats = write_replicated_trace(SRC, Path("/tmp/x100.json"), factor=100)
    >>> stats["kernels"]
    7900
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "tests" / "data" / "kineto" / \
    "benchmark_result_493459_1694039959_trace.json.gz"


def write_replicated_trace(src: Path, dst: Path, factor: int,
                           only: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Write ``factor`` time-shifted copies of ``src``'s events to ``dst`` (plain JSON).

    ``only`` keeps events of these categories (e.g. ``("kernel",)``); all events when None.

    Returns:
        ``bytes`` (file size), ``events`` and ``kernels`` written.
    """
    doc = json.loads(gzip.decompress(src.read_bytes()))
    events: list[dict[str, Any]] = [e for e in doc.pop("traceEvents")
                                    if only is None or e.get("cat") in only]
    timed = [e for e in events if isinstance(e.get("ts"), int | float)]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1000
    corr = 1 + max([e.get("args", {}).get("correlation", 0) for e in events] +
                   [e.get("id", 0) for e in events if isinstance(e.get("id"), int)])
    ext = 1 + max(e.get("args", {}).get("External id", 0) for e in events)
    n_events = n_kernels = 0
    with open(dst, "w") as fh:
        fh.write(json.dumps(doc)[:-1] + ', "traceEvents": [\n')
        first = True
        for r in range(factor):
            for e in events:
                if r and e.get("ph") == "M":
                    continue  # process/thread names once
                e2 = copy.deepcopy(e)
                if isinstance(e2.get("ts"), int | float) and e2.get("ph") != "M":
                    e2["ts"] = e2["ts"] + r * span
                if isinstance(e2.get("id"), int):
                    e2["id"] += r * corr
                args = e2.get("args")
                if isinstance(args, dict):
                    if isinstance(args.get("correlation"), int):
                        args["correlation"] += r * corr
                    if isinstance(args.get("External id"), int):
                        args["External id"] += r * ext
                fh.write(("" if first else ",\n") + json.dumps(e2))
                first = False
                n_events += 1
                n_kernels += e2.get("cat") == "kernel"
        fh.write('\n], "displayTimeUnit": "ms"}')
    return {"bytes": dst.stat().st_size, "events": n_events, "kernels": n_kernels}
