"""First evidence while the program runs: the in-context duration of the measured binary's
first kept launches, written by the hooks of a control run with timing soon after the launches
that follow the measured one, so the runner can print it before the program ends.

The hooks start :class:`FirstEvidence` once the program has made ``warmup + 2`` launches of the
kernel outside graph capture (the measured launch, kept apart because its inputs were copied,
and one after it); a thread waits ``delay_s``, asks CUPTI for the records it holds (a forced
flush: host work only, the kernels' device timestamps are not changed by it), pairs the
kernel's records with the hooks' launches as the timing split does (the k-th record outside
graphs is the k-th launch made outside capture) and writes :data:`FILE` with the median of the
launches of the binary after warm-up. It is provisional: the stored figure is the split of the
whole run at exit (:mod:`argusdb.observe.launch.timing`).

Example:
    >>> FirstEvidence(Path("out"), "k", warmup=5).due(6)
    False
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

#: The file the hooks write and the runner prints (in the control task's folder).
FILE = "first_evidence.json"


class FirstEvidence:
    """See the module docstring."""

    def __init__(self, out: Path, kernel: str, warmup: int, delay_s: float = 0.25) -> None:
        self.out, self.kernel, self.warmup, self.delay_s = out, kernel, warmup, delay_s
        self.started = False

    def due(self, settled: int) -> bool:
        """Whether to start, after ``settled`` launches outside graph capture."""
        return not self.started and settled >= self.warmup + 2

    def start(self, state: Any) -> None:
        self.started = True
        threading.Thread(target=self._run, args=(state,), daemon=True).start()

    def _run(self, st: Any) -> None:
        try:
            for _ in range(20):  # until a kept launch has completed (a few seconds at most)
                time.sleep(self.delay_s)
                act = st.activity
                act.cupti.activity_flush_all(1)
                with act.lock:
                    recs = [r for r in act.records if r.get("name") == self.kernel
                            and not r.get("graph_id")]
                with st.lock:
                    launches = [x for x in st.launches if not x.get("captured")]
                    copied = set(st.copied)
                got = self.kept(recs, launches, copied)
                if got is not None:
                    tmp = self.out / f".{FILE}.{os.getpid()}"
                    tmp.write_text(json.dumps({**got, "kernel": self.kernel,
                                               "at_unix": time.time()}))
                    tmp.rename(self.out / FILE)
                    return
        except Exception:  # provisional only: never disturb the program
            return

    def kept(self, recs: list[dict[str, Any]], launches: list[dict[str, Any]],
             copied: set[int]) -> dict[str, Any] | None:
        """Median (µs) of the launches of the binary of the program's latest launch, after
        ``warmup`` of them and without those whose inputs the capture copied."""
        recs = sorted(recs, key=lambda r: r["correlation_id"])
        pairs = list(zip(recs, launches, strict=False))
        prog = [x for _, x in pairs if x["role"] == "program"]
        if not prog:
            return None
        binary = prog[-1]["binary"]
        of_binary = [(r, x) for r, x in pairs if x["role"] == "program"
                     and x["binary"] == binary]
        durs = [(r["end"] - r["start"]) / 1e3 for r, x in of_binary[self.warmup:]
                if x["i"] not in copied]
        if not durs:
            return None
        return {"binary": binary, "launches": len(durs), "median_us": statistics.median(durs)}


def say(path: Path) -> dict[str, Any] | None:
    """Print the first evidence of ``path`` (written by :class:`FirstEvidence`) on stderr."""
    import sys

    try:
        got: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    print(f"argus: {got['kernel']} in the program so far: median {got['median_us']:.2f} us over "
          f"{got['launches']} launches of binary {str(got['binary'])[:12]} (in-context duration, "
          "provisional: the stored figure follows at the end of the run)", file=sys.stderr,
          flush=True)
    return got


class AsmAhead:
    """The control run's SASS listing (``nvdisasm`` of the binary, 0.5 s or so) made while the
    program still runs, not at its exit: started with :class:`FirstEvidence`, for the binary of
    the program's latest launch; at exit it is used when that is the binary the run settled
    on (else the listing is made again). ``nvdisasm`` runs on the CPU: the program's kernels
    and their device timestamps are not touched by it."""

    def __init__(self, out: Path, warmup: int) -> None:
        self.out, self.warmup = out, warmup
        self.thread: threading.Thread | None = None
        self.binary: str | None = None
        self.info: dict[str, Any] | None = None

    def due(self, settled: int) -> bool:
        return self.thread is None and settled >= self.warmup + 2

    def start(self, binary: str, compiled: Any, stem: str) -> None:
        from argusdb.observe.runner.gpu_tools import save_asm

        self.binary = binary

        def run() -> None:
            try:
                self.info = save_asm(compiled, self.out, stem)
            except Exception:  # made again at exit
                self.info = None

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def take(self, chosen: str | None) -> dict[str, Any] | None:
        """What :func:`save_asm` returned for ``chosen``, or None (not made ahead, or made
        for another binary: the exit writes it, under the same file names)."""
        if self.thread is None:
            return None
        self.thread.join()
        return self.info if chosen == self.binary else None
