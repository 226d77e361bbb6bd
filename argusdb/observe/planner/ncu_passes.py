"""Replay passes Nsight Compute took for section lists, as observed on the H200.

CUPTI's profiler host counts passes of hardware-counter lists (:mod:`.profiler_host`), but a
section such as SourceCounters also patches SASS and samples PCs, which only Nsight Compute
schedules. So for section lists the planner uses what ncu reported on real runs
(``data/ncu_passes.json``, with the command and the artefact each number comes from) and says
"unknown" for any other list.

Example:
    >>> observed(["SpeedOfLight", "LaunchStats", "Occupancy", "SourceCounters",
    ...           "WarpStateStats"], "softmax_fwd").passes
    20
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).parent / "data" / "ncu_passes.json"


@dataclass(frozen=True)
class Observation:
    """Passes of one section list (or set), and what they were observed on."""

    passes: int
    kernels: tuple[str, ...]
    tool: str
    source: str

    def describe(self, kernel: str) -> str:
        on = (f"{kernel}" if kernel in self.kernels
              else f"{', '.join(self.kernels)}; not observed for {kernel}")
        return f"{self.passes} passes observed with {self.tool} on the H200 ({on})"


@cache
def _table() -> list[dict[str, Any]]:
    return list(json.loads(TABLE.read_text(encoding="utf-8"))["observations"])


def observed(sections: list[str], kernel: str, section_set: str | None = None
             ) -> Observation | None:
    """The observed pass count of ``sections`` (or of ``section_set``), else None."""
    for o in _table():
        if (section_set is not None and o["set"] == section_set) or (
                o["sections"] is not None and sorted(o["sections"]) == sorted(sections)):
            return Observation(int(o["passes"]), tuple(o["kernels"]), o["tool"], o["source"])
    return None
