"""``plan()``: expand an observe request into a DAG of tasks, one run per compatible collection.

Which collection answers which signal (see :mod:`argusdb.planner.signals`):

========================  ==============================================================
duration (kernel)         ``cupti_timing`` of the parent: activity tracing only, clean timing
duration (inside kernel,  ``proton_scopes`` transform + ``proton_instr`` run (instrumented),
CTA/warp/... scope)       plus a clean ``cupti_timing`` run to show what instrumentation costs
source-page signals       ``ncu_source`` with the recorded section list (SourceCounters and
                          four more, 20 passes observed on the H200), then ``attribute``
metric names              ``ncu_source`` runs, metrics packed so that each run's counters come
                          from one replay pass where CUPTI's profiler host says they fit
NAME@proton               ``proton_pcsampling``, then ``attribute``
exposed_latency           ``forced_wait`` transform + ``cupti_timing`` of parent and variant
                          (the same collection) + ``derive_exposed_latency``
========================  ==============================================================

Collections that interfere never share a run, and each collect task says in ``why`` which other
runs of the plan it is kept apart from and for what reason (:mod:`.interference`).

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

from argusdb.errors import InputError
from argusdb.planner import cost, ncu_passes, reuse
from argusdb.planner.interference import explain_splits, pack_metrics
from argusdb.planner.plan import Plan, PlanError, Task
from argusdb.planner.profiler_host import CHIPS, PassCounter, live_counter, load_table
from argusdb.planner.scope import intra_kernel, parse_scope
from argusdb.planner.signals import Signal, parse_signals
from argusdb.regions import ProgramSource, Region, parse_regions
from argusdb.store import Store

#: Launches run before measuring (compilation, caches, clocks settle) and launches measured.
LAUNCHES_WARMUP = 5
LAUNCHES_MEASURED = 20

#: Nsight Compute sections of a source-page run: those recorded on the H200 by tools/h200/record.py,
#: whose pass count is observed (data/ncu_passes.json).
SOURCE_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "SourceCounters", "WarpStateStats")

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
         plan_id: str | None = None, command: list[str] | None = None,
         cwd: str | None = None, budget_s: float | None = None) -> Plan:
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
        command: the user's command (argv) that launches the kernel; every run of the plan
            runs it unmodified under the launcher (:mod:`argusdb.launch`). None: the source
            follows the harness contract.
        cwd: the command's working directory.
        budget_s: drop the costliest signals until the plan's estimated wall seconds fit
            (estimates from the store's recorded task costs); the notes say what was dropped.

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
    request: dict[str, Any] = {"source": src.name, "region": region_id,
                               "signals": [s.label for s in sigs],
                               "scope": {k: v for k, v in sc.items() if v != "all"}}
    if command is not None:
        request.update({"command": list(command), "cwd": cwd})
        _check_command(sigs, sc, intra_kernel(sc), region)
    b = _Builder(plan_id or _plan_id(request))
    notes: list[str] = []
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
    if command is not None:
        control.params.update({"program": region.program, "command": list(command)})
        control.why = (f"run the command once with the launcher's Triton hooks: find the "
                       f"launches of the @triton.jit function {kernel} of module "
                       f"{region.program}, the binary the program settles on (after "
                       f"autotuning: the autotuner's chosen config), its hash, num_warps, "
                       f"num_stages, constexprs and target, and the launch to measure (the "
                       f"{LAUNCHES_WARMUP + 1}th of that binary, or its last); dump its TTGIR, "
                       f"PTX and SASS so attribution has call sites")
    parent_timing: Task | None = None

    def clean_timing(purpose: str) -> Task:
        nonlocal parent_timing
        if parent_timing is None:
            parent_timing = b.add("cupti_timing.parent", "collect", "cupti_timing",
                                  f"clean activity timing of {kernel} ({purpose})",
                                  {"version": "parent", "launches": measured,
                                   "launch": launch, "signals": ["duration"]}, [control])
        elif purpose not in parent_timing.why:
            parent_timing.why += f"; also {purpose}"
        return parent_timing

    families = {s.family for s in sigs}
    kernel_timing = command is not None and not intra
    if "timing" in families and kernel_timing and not region.is_kernel:
        clean_timing(f"duration of every measured launch of kernel {kernel}, which contains "
                     f"region {region.name}")
        notes.append(f"duration: taken for the kernel {kernel_region}, whose rows are keyed to "
                     f"it, not to {region_id}: a region's own duration needs Proton "
                     f"instrumentation, which the command form does not run (use the harness "
                     f"form for it)")
    elif "timing" in families:
        if region.is_kernel and not intra:
            clean_timing("duration of every measured launch")
        else:
            # Proton scopes sit at region markers: a kernel is timed through its regions.
            targets = [region] if not region.is_kernel else [
                r for r in parse_regions(src) if r.kernel == kernel and r.name
                and r.name != "_entry"]
            if not targets:
                raise PlanError(f"{src.name}: kernel {kernel} has no '# region' markers, so "
                                f"Proton scopes have nowhere to go for scope "
                                f"{_fmt_scope(sc)}; mark its regions first")
            ids = [r.region_id for r in targets]
            label = _variant(src, "proton_scopes", {"region_ids": ids})
            what = (f"region {region.name}" if not region.is_kernel
                    else f"kernel {kernel} (through its regions {', '.join(ids)})")
            scopes = b.add("proton_scopes", "transform", "proton_scopes",
                           f"{what} has no clean duration of its own"
                           f"{' at ' + _fmt_scope(sc) if _fmt_scope(sc) else ''}: make a "
                           f"variant with Proton enter/exit scopes at the region markers "
                           f"(per-CTA, per-warp events); checked to compute the parent's result",
                           {"region_ids": ids, "transform": label}, [control])
            b.add("proton_instr", "collect", "proton_instr",
                  f"intra-kernel timing of {what} at {_fmt_scope(sc) or 'every launch'} "
                  f"from the instrumented variant, in cycles per scope (scope_cycles; the "
                  f"evidence carries the instrumentation in its signature)",
                  {"version": scopes.id, "scope": sc, "signals": ["scope_cycles"]},
                  [control, scopes])
            clean_timing("reference for the overhead of the instrumented run")
    if "derived" in families:
        if region.is_kernel:
            raise PlanError(f"exposed_latency of {region_id}: a forced wait needs a region "
                            f"inside a kernel that issues global loads (tl.load); this one is "
                            f"the whole kernel. Pick a load region (see 'argus regions "
                            f"{src.name}')")
        label = _variant(src, "forced_wait", {"region_id": region_id})
        parent = clean_timing("the parent side of exposed_latency")
        fw = b.add("forced_wait", "transform", "forced_wait",
                   f"variant whose global loads in region {region.name} complete before the "
                   f"next stage starts: the latency the pipeline hid becomes visible; checked "
                   f"to compute the parent's result", {"region_id": region_id,
                                                       "transform": label}, [control])
        variant = b.add("cupti_timing.forced_wait", "collect", "cupti_timing",
                        "activity timing of the forced-wait variant, the same collection as "
                        "the parent's timing so the difference is the probe alone",
                        {"version": fw.id, "launches": measured, "launch": launch,
                         "signals": ["duration"]}, [control, fw])
        b.add("derive_exposed_latency", "synthesize", "derive_exposed_latency",
              f"exposed latency of {region_id}: variant minus parent duration, per launch, "
              f"kept only where the probe still explains the kernel",
              {"parent_task": parent.id, "variant_task": variant.id, "region_id": region_id,
               "signals": ["exposed_latency"]}, [parent, variant])
    mapped: list[Task] = []
    source_sigs = [s.name for s in sigs if s.family == "source"]
    if source_sigs:
        seen = ncu_passes.observed(list(SOURCE_SECTIONS), kernel)
        passes = (seen.describe(kernel) if seen else "pass count of this section list not "
                  "observed yet")
        mapped.append(b.add(
            "ncu_source", "collect", "ncu_source",
            f"per-SASS-instruction {', '.join(source_sigs)} from the Nsight Compute source page "
            f"(SourceCounters: instruction counts by SASS patching, stall samples by PC "
            f"sampling), with the sections recorded on the H200: {passes}",
            {"version": "parent", "sections": list(SOURCE_SECTIONS), "metrics": [],
             "signals": source_sigs, "launch": launch, "clock_control": "none",
             "expected_passes": seen.passes if seen else None,
             "passes_from": seen.source if seen else None}, [control]))
    metric_names = [s.name for s in sigs if s.family == "metric"]
    for i, g in enumerate(pack_metrics(metric_names, counter, chip), start=1):
        b.add(f"ncu_metrics.{i}", "collect", "ncu_source",
              f"hardware counters {', '.join(g.metrics)} under replay: {g.basis}",
              {"version": "parent", "sections": [], "metrics": g.metrics,
               "signals": list(g.metrics), "launch": launch, "clock_control": "none",
               "expected_passes": g.passes, "passes_from": counter.name}, [control])
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

    p = Plan(b.plan_id, request, b.tasks, notes)
    p.tasks = p.ordered()
    _number_runs(p)
    explain_splits(p, counter, chip)
    if store is not None:
        _reuse(p, store, src, options, kernel_region, kernel, sc)
        _estimate(p, store)
    p.validate()
    return p


#: Intra-kernel coordinates that Proton instrumentation resolves (scope_event rows per CTA and
#: warp, see collectors/proton/trace.py); others (a warp role, a loop iteration) it does not.
DELIVERED_INTRA = ("cta", "sm", "warp")


def _check_command(sigs: list[Signal], sc: dict[str, str], intra: list[str],
                   region: Region) -> None:
    """Refuse what the command runner cannot deliver, instead of planning it."""
    families = {s.family for s in sigs}
    if intra:
        raise PlanError(f"a duration inside a kernel (region {region.region_id}"
                        f", scope {_fmt_scope(sc)}) needs Proton "
                        f"instrumentation, which the command form does not run yet; ask for "
                        f"the kernel's duration ({region.program}/{region.kernel}), or use "
                        f"the harness form (argus observe KERNEL_FILE --region ...)")
    if "pcsampling" in families:
        raise PlanError("Proton PC sampling (NAME@proton) is not run for a command yet; use "
                        "the Nsight Compute source page (warp_stall_samples) instead")


def _check_scope(sigs: list[Signal], sc: dict[str, str], intra: list[str]) -> None:
    if not intra:
        return
    lacking = [k for k in intra if k not in DELIVERED_INTRA]
    if lacking:
        raise PlanError(f"scope {_fmt_scope(sc)}: no collection resolves "
                        f"{', '.join(lacking)} (Proton scope events carry "
                        f"{', '.join(DELIVERED_INTRA)} only), so every row would come back "
                        f"'all'; drop {', '.join(f'--scope {k}=...' for k in lacking)}")
    bad = [s.label for s in sigs if s.family != "timing"]
    if bad:
        raise PlanError(f"signals {bad} cannot be taken at scope {_fmt_scope(sc)}: they are "
                        f"per-kernel or per-instruction values (Nsight Compute, PC sampling, "
                        f"launch timing); only Proton scopes (signal 'duration') resolve "
                        f"{', '.join(intra)}. Ask for them in a request without "
                        f"{', '.join(intra)} in its scope")


def _variant(src: ProgramSource, action: str, params: dict[str, Any]) -> str:
    """Make the variant now (pure source transform) so a plan never promises one that cannot
    be made; returns its transform label, e.g. ``forced_wait:softmax/softmax_fwd/load``."""
    from argusdb.transforms import apply

    try:
        return apply(action, src, params).transform
    except InputError as exc:
        raise PlanError(f"cannot plan the {action} variant: {exc}") from exc


def _fmt_scope(sc: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sc.items() if v != "all")


def _number_runs(p: Plan) -> None:
    n = 0
    for t in p.tasks:
        if t.kind == "collect":
            n += 1
            t.run = f"r{n}"


def _reuse(p: Plan, store: Store, src: ProgramSource, options: dict[str, str] | None,
           kernel_region: str, kernel: str, sc: dict[str, str]) -> None:
    parents = reuse.parent_versions(store, src, options)
    for t in p.tasks:
        if t.kind != "collect":
            continue
        version = t.params.get("version", "parent")
        transform = None if version == "parent" else p.task(version)
        versions = parents if transform is None else reuse.variant_versions(
            store, parents, transform.params["transform"])
        found, notes = reuse.find(store, t, versions, kernel_region, kernel, sc)
        t.reuse = found
        if notes:
            t.why += ". " + "; ".join(notes)
        # A variant needed by nothing else need not be made again.
        if found and transform is not None and "command" not in p.request and all(
                d.reuse for d in p.tasks if transform.id in d.depends_on):
            transform.reuse = {"run_id": None, "program_version": versions.ids[0],
                               "why": f"its only consumer {t.id} reuses run {found['run_id']}"}
    if not parents.ids:
        p.notes.append(f"nothing reused: {parents.why}")


def _estimate(p: Plan, store: Store) -> None:
    est = cost.estimates(store)
    for t in p.tasks:
        t.estimate = est.get(t.action)
