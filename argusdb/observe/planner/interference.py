"""Which collections interfere, how counters are packed into replay passes, and the reasons.

Two collect tasks never share a run; :func:`explain_splits` writes into each one's ``why`` the
reason it is apart from every other run of the plan, from :data:`CONFLICTS` (pairs of actions)
or from CUPTI's pass counts (two counter runs). :func:`pack_metrics` groups requested counters
so that each run's counters come from one replay pass where CUPTI says they fit.

Example:
    >>> from argusdb.observe.planner.profiler_host import load_table
    >>> [g.metrics for g in pack_metrics(["dram__bytes_read.sum", "dram__bytes_write.sum"],
    ...                                 load_table(), "GH100")]
    [['dram__bytes_read.sum', 'dram__bytes_write.sum']]
"""

from __future__ import annotations

from dataclasses import dataclass

from argusdb.observe.planner.plan import Plan, Task
from argusdb.observe.planner.profiler_host import PassCounter

#: Why two collections cannot share a run, by (unordered) pair of actions.
CONFLICTS: dict[frozenset[str], str] = {
    frozenset({"cupti_timing", "ncu_source"}):
        "Nsight Compute replays and serializes the kernel, saving and restoring memory between "
        "passes, so durations taken under it are not clean timing",
    frozenset({"cupti_timing", "proton_instr"}):
        "Proton instrumentation adds instructions to the kernel and shifts the timing a clean "
        "run must not see",
    frozenset({"cupti_timing", "proton_pcsampling"}):
        "PC sampling stops warps to sample them, so timing taken with it is perturbed",
    frozenset({"ncu_source", "proton_instr"}):
        "instrumentation changes the instructions the counters count",
    frozenset({"ncu_source", "proton_pcsampling"}):
        "both attach to CUPTI, which takes one subscriber per process "
        "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), and sampling would perturb the "
        "replayed kernel",
    frozenset({"proton_instr", "proton_pcsampling"}):
        "PC sampling would perturb the scope timings of the instrumented run",
}


@dataclass
class _MetricGroup:
    metrics: list[str]
    passes: int | None
    basis: str


def _passes(counter: PassCounter, chip: str | None, metrics: list[str]) -> int | None:
    """Pass count on ``chip``; None when the chip (the target) or the count is not known."""
    return None if chip is None else counter.passes(chip, metrics)


def pack_metrics(metrics: list[str], counter: PassCounter,
                 chip: str | None) -> list[_MetricGroup]:
    """Group metrics so that each group's counters are collected in one replay pass.

    A metric that needs several passes by itself gets a run of its own; one whose pass count
    is unknown (no profiler host, not in the recorded table) too: never a guess.
    """
    groups: list[_MetricGroup] = []
    src = counter.name
    for m in metrics:
        alone = _passes(counter, chip, [m])
        if alone is None:
            on = chip or "an unknown target"
            groups.append(_MetricGroup([m], None, f"the pass count of {m} on {on} is not known "
                                       f"here ({src} does not have it), so it gets a run of its "
                                       f"own"))
            continue
        if alone > 1:
            groups.append(_MetricGroup([m], alone, f"{m} needs {alone} replay passes by itself "
                                       f"on {chip} ({src}); its sub-counters come from "
                                       f"different replays"))
            continue
        for g in groups:
            if g.passes == 1 and _passes(counter, chip, [*g.metrics, m]) == 1:
                g.metrics.append(m)
                g.basis = (f"{', '.join(g.metrics)} fit in 1 replay pass together on {chip} "
                           f"({src}), so their counters are simultaneous")
                break
        else:
            groups.append(_MetricGroup([m], 1, f"{m} needs 1 replay pass on {chip} ({src})"))
    return groups


def split_reason(a: Task, b: Task, counter: PassCounter, chip: str | None) -> str:
    if a.params.get("version") != b.params.get("version") and a.action == b.action:
        version = str(b.params.get("version"))
        which = "the parent" if version == "parent" else f"the {version.rsplit('.', 1)[-1]} variant"
        return f"another program version ({which}): one run measures one version"
    pair = frozenset({a.action, b.action})
    if pair in CONFLICTS:
        return CONFLICTS[pair]
    if a.action == b.action == "ncu_source":
        if a.params.get("sections") or b.params.get("sections"):
            return ("the source page's replay (SASS patching, PC sampling and its sections' "
                    "counters) is scheduled by ncu; requested counters are kept out of it so "
                    "their pass packing holds")
        both = [*a.params["metrics"], *b.params["metrics"]]
        n = _passes(counter, chip, both)
        if n is None:
            return (f"the pass count of {', '.join(both)} together is not known here "
                    f"({counter.name}); split conservatively")
        return (f"{', '.join(both)} need {n} replay passes together on {chip} "
                f"({counter.name}), so they could not be simultaneous in one run")
    return f"a different collection ({b.action})"


def explain_splits(p: Plan, counter: PassCounter, chip: str | None) -> None:
    """Append to each collect task why it is a run apart from each other run of the plan.

    Runs kept apart for the same reason are named together: ``r2, r3 (ncu_source): ...``.
    """
    collects = [t for t in p.tasks if t.kind == "collect"]
    for a in collects:
        by_reason: dict[tuple[str, str], list[str]] = {}
        for b in collects:
            if b is not a:
                key = (b.action, split_reason(a, b, counter, chip))
                by_reason.setdefault(key, []).append(b.run or "")
        if by_reason:
            a.why += ". Own run, apart from " + "; ".join(
                f"{', '.join(runs)} ({action}): {reason}"
                for (action, reason), runs in by_reason.items())
        else:
            a.why += ". The plan's only run"
