"""The signals ``observe`` can ask for, and which collection produces each.

A signal is one of:

- ``duration``: launch duration of a kernel (clean activity timing, cupti-python), or of a region
  inside a kernel / at an intra-kernel scope (Proton scopes, under instrumentation);
- a source-page signal of Nsight Compute (per SASS instruction): ``inst_executed``,
  ``thread_inst_executed``, ``warp_stall_samples``, ``warp_stall_samples_not_issued``,
  ``stall_<reason>`` and ``stall_<reason>_not_issued``;
- an Nsight Compute / CUPTI metric name ``<base>.<rollup>[.<submetric>]`` such as
  ``dram__bytes_read.sum`` (checked against CUPTI's own list for the chip);
- ``exposed_latency``: derived from a forced-wait variant and its parent, timed alike.

``pc_samples@proton``, ``pc_stalled_samples@proton`` and ``stall_<reason>@proton`` take samples
with Proton's PC sampling instead of Nsight Compute (per source line, no replay); its stall
reasons have CUPTI's names (``stall_long_scoreboard``, where the ncu source page says
``stall_long_sb``).

Example:
    >>> parse_signal("stall_long_sb").family
    'source'
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Protocol

from argusdb.errors import PlanError

#: Stall reasons of the Nsight Compute source page on sm_90 (columns of the recorded
#: ``softmax.source.csv``; ncu writes ``stall_sleep`` for all samples, ``stall_sleeping`` for
#: not-issued ones).
STALL_REASONS = ("barrier", "branch_resolving", "dispatch", "drain", "imc", "lg", "long_sb",
                 "math", "membar", "mio", "misc", "no_inst", "not_selected", "selected",
                 "short_sb", "sleep", "sleeping", "tex", "wait")

#: Source-page signals that are not stall reasons (names as argusdb/collectors/ncu gives them).
SOURCE_SIGNALS = ("inst_executed", "thread_inst_executed", "thread_inst_executed_pred_on",
                  "warp_stall_samples", "warp_stall_samples_not_issued")

#: Stall reasons of Proton's PC sampling (CUPTI's names, ``stalled_<reason>`` in the hatchet
#: tree; argusdb/collectors/proton gives them as ``stall_<reason>``), as recorded on the H200.
PROTON_STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss",
                        "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                        "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
                        "short_scoreboard", "sleeping", "tex_throttle", "wait")

#: Signals Proton's PC sampling gives (asked for with the ``@proton`` qualifier).
PCS_SIGNALS = ("pc_samples", "pc_stalled_samples",
               *(f"stall_{r}" for r in PROTON_STALL_REASONS))

FAMILIES = {
    "timing": "duration",
    "source": "Nsight Compute source page (per SASS instruction, under replay)",
    "metric": "Nsight Compute metric (hardware counters, under replay)",
    "pcsampling": "Proton PC sampling (per source line)",
    "derived": "derived from a perturbed variant and its parent",
}

_METRIC = re.compile(r"^[A-Za-z0-9_.]+__[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+$")


class MetricCatalog(Protocol):
    """Knows the metric names of one chip (a live profiler host or the recorded table)."""

    def is_metric(self, name: str) -> bool: ...

    def suggest(self, name: str) -> list[str]: ...


@dataclass(frozen=True)
class Signal:
    """A requested signal and the family of collection that produces it."""

    name: str
    family: str

    @property
    def label(self) -> str:
        return f"{self.name}@proton" if self.family == "pcsampling" else self.name


def _stall_names() -> list[str]:
    return [f"stall_{r}" for r in STALL_REASONS] + [f"stall_{r}_not_issued" for r in STALL_REASONS]


def known_names() -> list[str]:
    """Every fixed signal name (metric names come from the chip's metric list)."""
    return ["duration", "exposed_latency", *SOURCE_SIGNALS, *_stall_names(),
            *(f"{s}@proton" for s in PCS_SIGNALS)]


def parse_signal(text: str, metrics: MetricCatalog | None = None) -> Signal:
    """Parse one requested signal name.

    Raises:
        PlanError: the name is not a signal; the message lists the closest names.
    """
    name = text.strip()
    if name.endswith("@proton"):
        base = name[: -len("@proton")]
        if base in PCS_SIGNALS:
            return Signal(base, "pcsampling")
        raise PlanError(_unknown(name, [f"{s}@proton" for s in PCS_SIGNALS],
                                 "Proton PC sampling gives pc_samples, pc_stalled_samples and "
                                 "stall_<reason> with CUPTI's reason names"))
    if name == "duration":
        return Signal(name, "timing")
    if name == "exposed_latency":
        return Signal(name, "derived")
    if name in SOURCE_SIGNALS or name in _stall_names():
        return Signal(name, "source")
    if _METRIC.match(name):
        if metrics is not None and not metrics.is_metric(name):
            close = metrics.suggest(name)
            hint = f" Did you mean {' or '.join(close)}?" if close else ""
            raise PlanError(f"signal {name!r}: not a metric CUPTI knows for this chip "
                            f"(a metric is <base>.<rollup>[.<submetric>], e.g. "
                            f"dram__bytes_read.sum).{hint}")
        return Signal(name, "metric")
    raise PlanError(_unknown(name, known_names(), "signals are duration, exposed_latency, "
                             "inst_executed, warp_stall_samples, stall_<reason>, Nsight Compute "
                             "metric names (e.g. dram__bytes_read.sum), and NAME@proton for PC "
                             "sampling"))


def _unknown(name: str, choices: list[str], fix: str) -> str:
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown signal {name!r}.{hint} Known: {fix}."


def parse_signals(texts: list[str], metrics: MetricCatalog | None = None) -> list[Signal]:
    """Parse a list of signal names (duplicates dropped, order kept)."""
    if not texts:
        raise PlanError("no signals requested: name at least one, e.g. --signals duration")
    out: list[Signal] = []
    for t in texts:
        s = parse_signal(t, metrics)
        if s not in out:
            out.append(s)
    return out
