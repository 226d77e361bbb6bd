"""The launch hooks' timing concern: CUPTI activity of the run, split by binary and role.

The evidence file keeps the program's kernels and the target's launches of the measured binary
after warm-up; the target's other launches (autotuning, warm-up, checks, other binaries, the
launch the capture copied the inputs of) are written apart, never mixed into the evidence.

Example:
    >>> t = TimingSplit("softmax_fwd", warmup=5)
    >>> t.match([], []) == []
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class TimingSplit:
    """Pairs the target's CUPTI kernel records with the hooks' launches and splits the file."""

    def __init__(self, kernel: str, warmup: int) -> None:
        self.kernel, self.warmup = kernel, warmup
        self.errors: list[str] = []
        #: of the split: the chosen binary's launches, those kept, graph executions, apart
        self.counts: dict[str, int] | None = None

    def split(self, recs: list[dict[str, Any]], launches: list[dict[str, Any]],
              chosen: str | None, out: Path, pid: int, skip: frozenset[int] = frozenset()
              ) -> list[str]:
        """Write the evidence file (kernels of the program, the target's measured binary after
        warm-up) and, apart, the target's other launches (autotuning, warm-up, checks, and
        ``skip``: launches whose inputs the capture copied just before them)."""
        from argusdb.observe.runner.gpu_tools import write_jsonl

        paired = self.match(recs, launches)
        if paired is None:
            write_jsonl(out / f"all.{pid}.cupti.jsonl", recs)
            return [f"all.{pid}.cupti.jsonl"]
        warmup = self.warmup
        apart: set[int] = set()
        seen = 0
        for rec, launch in paired:
            rec["argus_binary"], rec["argus_role"] = launch["binary"], launch["role"]
            keep = launch["role"] == "program" and launch["binary"] == chosen
            if keep:
                keep = seen >= warmup and launch["i"] not in skip
                seen += 1
            if not keep:
                apart.add(id(rec))
        self.counts = {"of_binary": seen, "kept": max(0, seen - warmup),
                       "graph_executions": sum(1 for r, _ in paired if r.get("graph_id")),
                       "apart": len(apart),
                       **({"capture_copied": len(skip)} if skip else {})}
        evidence = [r for r in recs if id(r) not in apart]
        other = [r for r in recs if id(r) in apart]
        for r in evidence:
            r.pop("argus_binary", None)
            r.pop("argus_role", None)
        write_jsonl(out / f"timing.{pid}.cupti.jsonl", evidence)
        write_jsonl(out / f"apart.{pid}.jsonl", other)
        return [f"timing.{pid}.cupti.jsonl", f"apart.{pid}.jsonl"]

    def match(self, recs: list[dict[str, Any]], launches: list[dict[str, Any]]
              ) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
        """The target's CUPTI kernel records in start order, each with the launch it ran.

        A launch made outside CUDA graph capture ran once: the records launched by no graph
        (``graph_id`` 0) are those launches, in correlation order. A launch made while its
        stream was capturing ran nothing then; it became a node of the graph, and each replay
        of the graph runs it (records with a ``graph_id``): all of them are that captured
        launch's binary. Records of a graph when the captured launches were of several
        binaries cannot be told apart (None, with the error).
        """
        mine = [r for r in recs if r.get("kind") == "CONCURRENT_KERNEL"
                and r.get("name") == self.kernel]
        eager = sorted((r for r in mine if not r.get("graph_id")),
                       key=lambda r: r["correlation_id"])
        graphed = [r for r in mine if r.get("graph_id")]
        direct = [x for x in launches if not x.get("captured")]
        captured = [x for x in launches if x.get("captured")]
        if len(eager) != len(direct):
            self.errors.append(f"CUPTI saw {len(eager)} launches of {self.kernel} outside CUDA "
                               f"graphs, the hook {len(direct)}: they cannot be matched to "
                               "binaries")
            return None
        if graphed and not captured:
            self.errors.append(f"CUPTI saw {len(graphed)} launches of {self.kernel} from CUDA "
                               "graphs, but the hook saw none of its launches captured (a "
                               "graph captured before the hooks, or built by hand): their "
                               "binary is unknown; capture the graph in the observed command, "
                               "after Triton's launch hooks are in place")
            return None
        kinds = {(x["binary"], x["role"]) for x in captured}
        if graphed and len(kinds) > 1:
            self.errors.append(f"{self.kernel} was captured into CUDA graphs as "
                               f"{len(kinds)} binaries; the {len(graphed)} launches of the "
                               "graphs' replays cannot be told apart by binary: observe a run "
                               "that captures one binary of it (one shape per graph)")
            return None
        pairs = list(zip(eager, direct, strict=True))
        if graphed:
            pairs += [(r, captured[0]) for r in graphed]
        return sorted(pairs, key=lambda p: p[0]["start"])
