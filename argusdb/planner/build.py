"""``plan()``: expand an observe request into a DAG of tasks, one run per compatible collection.

Which collection answers which signal (see :mod:`argusdb.planner.signals`):

========================  ==============================================================
duration (kernel)         ``cupti_timing`` of the parent: activity tracing only, clean timing
duration (inside kernel,  ``proton_scopes`` transform + ``proton_instr`` run (instrumented),
CTA/warp/... scope)       plus a clean ``cupti_timing`` run to show what instrumentation costs
source-page signals       ``ncu_source`` with the SourceCounters section, then ``attribute``
metric names              ``ncu_source`` runs, metrics packed so that each run's counters come
                          from one replay pass where CUPTI's profiler host says they fit
NAME@proton               ``proton_pcsampling``, then ``attribute``
exposed_latency           ``forced_wait`` transform + ``cupti_timing`` of parent and variant
                          (the same collection) + ``derive_exposed_latency``
========================  ==============================================================

Collections that interfere never share a run, and each collect task says in ``why`` which other
runs of the plan it is kept apart from and for what reason.

Example:
    >>> p = plan("kernels/softmax.py", "softmax/softmax_fwd", ["duration"])
    >>> [(t.kind, t.action) for t in p.tasks]
    [('control', 'find_launch'), ('collect', 'cupti_timing')]
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argusdb.planner import cost, reuse
from argusdb.planner.plan import Plan, PlanError, Task
from argusdb.planner.profiler_host import CHIPS, PassCounter, TableCounter, live_counter, load_table
from argusdb.planner.scope import intra_kernel, parse_scope
from argusdb.planner.signals import Signal, parse_signals
from argusdb.regions import ProgramSource, Region, parse_regions
from argusdb.store import Store

#: Launches run before measuring (compilation, caches, clocks settle) and launches measured.
LAUNCHES_WARMUP = 5
LAUNCHES_MEASURED = 20

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
class _Builder:
    plan_id: str
    tasks: list[Task] = field(default_factory=list)

    def add(self, name: str, kind: str, action: str, why: str, params: dict[str, Any],
            depends_on: list[Task]) -> Task:
        # Run groups are numbered once the plan is in topological order (see _number_runs).
        run = "?" if kind == "collect" else None
        t = Task(f"{self.plan_id}.{name}", kind, [d.id for d in depends_on], run, why, action,
                 params)
        self.tasks.append(t)
        return t


@dataclass
class _MetricGroup:
    metrics: list[str]
    passes: int | None
    basis: str


def _pack_metrics(metrics: list[str], counter: PassCounter, chip: str) -> list[_MetricGroup]:
    """Group metrics so that each group's counters are collected in one replay pass.

    A metric that needs several passes by itself gets a run of its own; one whose pass count
    is unknown (no profiler host, not in the recorded table) too: never a guess.
    """
    groups: list[_MetricGroup] = []
    src = counter.name
    for m in metrics:
        alone = counter.passes(chip, [m])
        if alone is None:
            groups.append(_MetricGroup([m], None, f"the pass count of {m} on {chip} is not known "
                                       f"here ({src} does not have it), so it gets a run of its "
                                       f"own"))
            continue
        if alone > 1:
            groups.append(_MetricGroup([m], alone, f"{m} needs {alone} replay passes by itself "
                                       f"on {chip} ({src}); its sub-counters come from "
                                       f"different replays"))
            continue
        for g in groups:
            if g.passes == 1 and counter.passes(chip, [*g.metrics, m]) == 1:
                g.metrics.append(m)
                g.basis = (f"{', '.join(g.metrics)} fit in 1 replay pass together on {chip} "
                           f"({src}), so their counters are simultaneous")
                break
        else:
            groups.append(_MetricGroup([m], 1, f"{m} needs 1 replay pass on {chip} ({src})"))
    return groups


def _split_reason(a: Task, b: Task, counter: PassCounter, chip: str) -> str:
    if a.params.get("version") != b.params.get("version") and a.action == b.action:
        version = str(b.params.get("version"))
        which = "the parent" if version == "parent" else f"the {version.rsplit('.', 1)[-1]} variant"
        return f"another program version ({which}): one run measures one version"
    pair = frozenset({a.action, b.action})
    if pair in CONFLICTS:
        return CONFLICTS[pair]
    if a.action == b.action == "ncu_source":
        if a.params.get("sections") or b.params.get("sections"):
            return ("the source page needs SASS patching and PC-sampling passes of its own; "
                    "hardware counters are kept out of them so each run's replay is what "
                    "it says")
        both = [*a.params["metrics"], *b.params["metrics"]]
        n = counter.passes(chip, both)
        if n is None:
            return (f"the pass count of {', '.join(both)} together is not known here "
                    f"({counter.name}); split conservatively")
        return (f"{', '.join(both)} need {n} replay passes together on {chip} "
                f"({counter.name}), so they could not be simultaneous in one run")
    return f"a different collection ({b.action})"


def _region(src: ProgramSource, region_id: str) -> Region:
    by_id = {r.region_id: r for r in parse_regions(src)}
    if region_id in by_id:
        return by_id[region_id]
    import difflib

    close = difflib.get_close_matches(region_id, list(by_id), n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise PlanError(f"{src.name}: no region {region_id!r}.{hint} Regions: "
                    f"{', '.join(by_id)} (see 'argus regions {src.name}').")


def _plan_id(request: dict[str, Any]) -> str:
    doc = json.dumps(request, sort_keys=True) + str(time.time_ns())
    return "p-" + hashlib.sha256(doc.encode()).hexdigest()[:10]


def plan(source_path: str | Path, region_id: str, signals: list[str],
         scope: dict[str, str] | None = None, store: Store | None = None, *,
         options: dict[str, str] | None = None, counter: PassCounter | None = None,
         plan_id: str | None = None) -> Plan:
    """Plan the measurements that answer ``signals`` of ``region_id`` at ``scope``.

    Args:
        source_path: Triton kernel source with ``# region`` markers.
        region_id: ``<program>/<kernel>[/<name>]`` (see ``argus regions``).
        signals: signal names (see :mod:`argusdb.planner.signals`).
        scope: coordinate → value (``launch``, ``cta``, ``warp``, ...); ``all`` when not given.
        store: a store to reuse evidence from and to take cost estimates from.
        options: compile options and ``target`` of the program version, as ingest takes them;
            they pin the version reused evidence must have.
        counter: pass counter for metric lists; default: CUPTI's profiler host where reachable,
            else the table recorded with it.
        plan_id: fixed plan id (default: derived from the request and the time).

    Raises:
        PlanError: unknown region, signal or scope, or a signal the scope cannot have.
    """
    src = ProgramSource.from_path(source_path)
    region = _region(src, region_id)
    table = load_table()
    sigs = parse_signals(list(signals), table)
    sc = parse_scope(scope)
    target = (options or {}).get("target", "sm_90")
    chip = CHIPS.get(target)
    if chip is None:
        raise PlanError(f"target {target!r}: pass counts are known for {sorted(CHIPS)} only")
    counter = counter or live_counter() or table
    request = {"source": src.name, "region": region_id, "signals": [s.label for s in sigs],
               "scope": {k: v for k, v in sc.items() if v != "all"}}
    b = _Builder(plan_id or _plan_id(request))
    kernel = region.kernel
    kernel_region = f"{region.program}/{kernel}"
    intra = intra_kernel(sc)
    _check_scope(sigs, sc, intra)

    launch = sc["launch"]
    # A launch index beyond the default count asks for more measured launches, not an error.
    last = int(launch.split("-")[-1]) if launch[0].isdigit() else -1
    measured = max(LAUNCHES_MEASURED, last + 1)
    control = b.add("find_launch", "control", "find_launch",
                    f"find the launch of {kernel} in {src.name} and its completion "
                    f"(torch.cuda.synchronize); {LAUNCHES_WARMUP} warm-up launches are not "
                    f"measured, {measured} are", {
                        "kernel": kernel, "launches_warmup": LAUNCHES_WARMUP,
                        "launches_measured": measured}, [])
    parent_timing: Task | None = None

    def clean_timing(purpose: str) -> Task:
        nonlocal parent_timing
        if parent_timing is None:
            parent_timing = b.add("cupti_timing.parent", "collect", "cupti_timing",
                                  f"clean activity timing of {kernel} ({purpose})",
                                  {"version": "parent", "launches": measured,
                                   "launch": launch}, [control])
        elif purpose not in parent_timing.why:
            parent_timing.why += f"; also {purpose}"
        return parent_timing

    families = {s.family for s in sigs}
    if "timing" in families:
        if region.is_kernel and not intra:
            clean_timing("duration of every measured launch")
        else:
            what = (f"region {region.name}" if not region.is_kernel else f"kernel {kernel}")
            scopes = b.add("proton_scopes", "transform", "proton_scopes",
                           f"{what} has no clean duration of its own"
                           f"{' at ' + _fmt_scope(sc) if _fmt_scope(sc) else ''}: make a "
                           f"variant with Proton "
                           f"enter/exit scopes at its markers (per-CTA, per-warp events); "
                           f"checked to compute the parent's result",
                           {"region_ids": [region_id]}, [control])
            b.add("proton_instr", "collect", "proton_instr",
                  f"intra-kernel timing of {what} at {_fmt_scope(sc) or 'every launch'} "
                  f"from the instrumented variant (evidence carries the instrumentation in its "
                  f"signature)", {"version": scopes.id, "scope": sc}, [control, scopes])
            clean_timing("reference for the overhead of the instrumented run")
    if "derived" in families:
        _check_forced_wait(src, region)
        parent = clean_timing("the parent side of exposed_latency")
        fw = b.add("forced_wait", "transform", "forced_wait",
                   f"variant whose global loads in region {region.name} complete before the "
                   f"next stage starts: the latency the pipeline hid becomes visible; checked "
                   f"to compute the parent's result", {"region_id": region_id}, [control])
        variant = b.add("cupti_timing.forced_wait", "collect", "cupti_timing",
                        "activity timing of the forced-wait variant, the same collection as "
                        "the parent's timing so the difference is the probe alone",
                        {"version": fw.id, "launches": measured, "launch": launch},
                        [control, fw])
        b.add("derive_exposed_latency", "synthesize", "derive_exposed_latency",
              f"exposed latency of {region_id}: variant minus parent duration, per launch, "
              f"kept only where the probe still explains the kernel",
              {"parent_task": parent.id, "variant_task": variant.id, "region_id": region_id},
              [parent, variant])
    mapped: list[Task] = []
    source_sigs = [s.name for s in sigs if s.family == "source"]
    if source_sigs:
        mapped.append(b.add(
            "ncu_source", "collect", "ncu_source",
            f"per-SASS-instruction {', '.join(source_sigs)} from the Nsight Compute source page "
            f"(SourceCounters: instruction counts by SASS patching, stall samples by PC "
            f"sampling; ncu schedules their passes, not recorded here)",
            {"version": "parent", "sections": ["SourceCounters"], "metrics": [],
             "signals": source_sigs, "launch": launch, "clock_control": "none",
             "expected_passes": None}, [control]))
    metric_names = [s.name for s in sigs if s.family == "metric"]
    for i, g in enumerate(_pack_metrics(metric_names, counter, chip), start=1):
        b.add(f"ncu_metrics.{i}", "collect", "ncu_source",
              f"hardware counters {', '.join(g.metrics)} under replay: {g.basis}",
              {"version": "parent", "sections": [], "metrics": g.metrics, "signals": [],
               "launch": launch, "clock_control": "none", "expected_passes": g.passes,
               "passes_from": counter.name}, [control])
    pcs = [s.name for s in sigs if s.family == "pcsampling"]
    if pcs:
        mapped.append(b.add("proton_pcsampling", "collect", "proton_pcsampling",
                            f"per-source-line {', '.join(pcs)} from Proton PC sampling",
                            {"version": "parent", "signals": pcs}, [control]))
    if mapped:
        b.add("attribute", "synthesize", "attribute",
              f"map per-PC and per-line values of {' and '.join(t.action for t in mapped)} "
              f"onto {region_id}; instructions shared by regions are split by execution counts",
              {"runs": [t.id for t in mapped], "region_id": region_id}, mapped)

    p = Plan(b.plan_id, request, b.tasks)
    p.tasks = p.ordered()
    _number_runs(p)
    _explain_splits(p, counter, chip)
    if store is not None:
        _reuse(p, store, src, options, kernel_region, kernel, sc)
        _estimate(p, store)
    p.validate()
    return p


def _check_scope(sigs: list[Signal], sc: dict[str, str], intra: list[str]) -> None:
    if not intra:
        return
    bad = [s.label for s in sigs if s.family != "timing"]
    if bad:
        raise PlanError(f"signals {bad} cannot be taken at scope {_fmt_scope(sc)}: they are "
                        f"per-kernel or per-instruction values (Nsight Compute, PC sampling, "
                        f"launch timing); only Proton scopes (signal 'duration') resolve "
                        f"{', '.join(intra)}. Ask for them in a request without "
                        f"{', '.join(intra)} in its scope")


def _check_forced_wait(src: ProgramSource, region: Region) -> None:
    body = "\n".join(src.lines[region.start_line - 1: region.end_line])
    if region.is_kernel or "tl.load" not in body:
        raise PlanError(f"exposed_latency of {region.region_id}: a forced wait needs a region "
                        f"inside a kernel that issues global loads (tl.load); this one "
                        f"{'is the whole kernel' if region.is_kernel else 'has none'}. Pick a "
                        f"load region (see 'argus regions {src.name}')")


def _fmt_scope(sc: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sc.items() if v != "all")


def _number_runs(p: Plan) -> None:
    n = 0
    for t in p.tasks:
        if t.kind == "collect":
            n += 1
            t.run = f"r{n}"


def _explain_splits(p: Plan, counter: PassCounter, chip: str) -> None:
    """Append to each collect task why it is a run apart from each other run of the plan.

    Runs kept apart for the same reason are named together: ``r2, r3 (ncu_source): ...``.
    """
    collects = [t for t in p.tasks if t.kind == "collect"]
    for a in collects:
        by_reason: dict[tuple[str, str], list[str]] = {}
        for b in collects:
            if b is not a:
                key = (b.action, _split_reason(a, b, counter, chip))
                by_reason.setdefault(key, []).append(b.run or "")
        if by_reason:
            a.why += ". Own run, apart from " + "; ".join(
                f"{', '.join(runs)} ({action}): {reason}"
                for (action, reason), runs in by_reason.items())
        else:
            a.why += ". The plan's only run"


def _reuse(p: Plan, store: Store, src: ProgramSource, options: dict[str, str] | None,
           kernel_region: str, kernel: str, sc: dict[str, str]) -> None:
    versions = reuse.parent_versions(store, src, options)
    for t in p.tasks:
        if t.kind != "collect":
            continue
        found, notes = reuse.find(store, t, versions, kernel_region, kernel, sc)
        t.reuse = found
        if notes:
            t.why += ". " + "; ".join(notes)
    if not versions.ids:
        p.notes.append(f"nothing reused: {versions.why}")


def _estimate(p: Plan, store: Store) -> None:
    est = cost.estimates(store)
    for t in p.tasks:
        t.estimate = est.get(t.action)


def table_counter() -> TableCounter:
    """The recorded pass table (what CI plans with)."""
    return load_table()
