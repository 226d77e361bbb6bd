"""``plan()``: expand an observe request into a DAG of tasks, one run per compatible collection.

``plan`` checks the request (region, signals, scope, what the command form can deliver),
resolves the target (:mod:`.target`), adds the control task, then applies the recipe of each
requested signal family in the order of :data:`argusdb.observe.planner.recipes.RECIPES` (one module
per family, like sqlglot's optimizer rules), adds ``attribute`` for the collections that need
mapping, and numbers the runs. Which collection answers which signal is the recipes' table.

Collections that interfere never share a run, and each collect task says in ``why`` which other
runs of the plan it is kept apart from and for what reason (:mod:`.interference`).

Example:
    >>> from tests.conftest import ROOT
    >>> p = plan(ROOT / "argusdb/demo/h200/sources/softmax.py", "softmax/softmax_fwd",
    ...          ["duration"])
    >>> [(t.kind, t.action) for t in p.tasks]
    [('control', 'find_launch'), ('collect', 'cupti_timing')]
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from argusdb.collectors.regions import ProgramSource, Region, parse_regions
from argusdb.errors import PlanError
from argusdb.observe.planner import cost, replays, reuse
from argusdb.observe.planner import target as targets
from argusdb.observe.planner.interference import explain_splits
from argusdb.observe.planner.plan import Plan
from argusdb.observe.planner.profiler_host import CHIPS, PassCounter, live_counter, load_table
from argusdb.observe.planner.recipes import RECIPES
from argusdb.observe.planner.recipes.context import LAUNCHES_MEASURED, LAUNCHES_WARMUP, PlanContext
from argusdb.observe.planner.recipes.context import fmt_scope as _fmt_scope
from argusdb.observe.planner.recipes.source import SECTIONS as SOURCE_SECTIONS
from argusdb.observe.planner.scope import intra_kernel, parse_scope
from argusdb.schema.signals import Signal, parse_signals
from argusdb.store.embedded import Store

__all__ = ["LAUNCHES_MEASURED", "LAUNCHES_WARMUP", "SOURCE_SECTIONS", "plan"]


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
         cwd: str | None = None, budget_s: float | None = None, replay: bool = True,
         capture_limit: int | None = None) -> Plan:
    """Plan the measurements that answer ``signals`` of ``region_id`` at ``scope``.

    Args:
        source_path: Triton kernel source with ``# region`` markers.
        region_id: ``<program>/<kernel>[/<name>]`` (see ``argus regions``).
        signals: signal names (see :mod:`argusdb.schema.signals`).
        scope: coordinate → value (``launch``, ``cta``, ``warp``, ...); ``all`` when not given.
        store: a store to reuse evidence from and to take cost estimates from.
        options: compile options and ``target`` of the program version, as ingest takes them;
            they pin the version reused evidence must have. Without ``target`` the target is
            the stored binary's or this machine's GPU's (:func:`.target.resolve`).
        counter: pass counter for metric lists; default: CUPTI's profiler host where reachable,
            else the table recorded with it.
        plan_id: fixed plan id (default: derived from the request and the time).
        command: the user's command (argv) that launches the kernel; every run of the plan
            runs it unmodified under the launcher (:mod:`argusdb.observe.launch`). None: the source
            follows the harness contract.
        cwd: the command's working directory.
        budget_s: drop the costliest signals until the plan's estimated wall seconds fit
            (estimates from the store's recorded task costs); the notes say what was dropped.
        replay: in the command form, run the program once (the control run finds the launch,
            times the program's launches and captures the measured one) and collect what
            needs only the kernel on replays of that launch (:mod:`argusdb.observe.runner.
            replay`); False: run the program again for every collection (``--no-replay``).
        capture_limit: bytes the capture may copy (``--capture-limit``; default 4 GiB).

    Raises:
        PlanError: unknown region, signal or scope, or a signal the scope cannot have.
    """
    src = ProgramSource.from_path(source_path)
    region = _region(src, region_id)
    table = load_table()
    sigs = parse_signals(list(signals), table)
    sc = parse_scope(scope)
    tgt = targets.resolve(options, store, src)
    chip = CHIPS.get(tgt.target) if tgt.target else None
    if tgt.target is not None and chip is None and any(s.family == "metric" for s in sigs):
        raise PlanError(f"target {tgt.target} (from {tgt.how}): pass counts are known for "
                        f"{sorted(CHIPS)} only")
    counter = counter or live_counter() or table
    request: dict[str, Any] = {"source": src.name, "region": region_id,
                               "signals": [s.label for s in sigs],
                               "scope": {k: v for k, v in sc.items() if v != "all"}}
    intra = intra_kernel(sc)
    if command is not None:
        request.update({"command": list(command), "cwd": cwd})
        select = binary_select(options)
        if select:
            request["select"] = select
    _check_scope(sigs, sc, intra)

    launch = sc["launch"]
    # A launch index beyond the default count asks for more measured launches, not an error.
    last = int(launch.split("-")[-1]) if launch[0].isdigit() else -1
    ctx = PlanContext(plan_id or _plan_id(request), src, region, sc, intra, command, counter,
                      chip, tgt.how, max(LAUNCHES_MEASURED, last + 1),
                      select=request.get("select") or {},
                      replay=bool(replay and command is not None))
    if command is not None:
        request["replay"] = ctx.replay
    ctx.control = _control(ctx)
    for family, recipe in RECIPES:
        of_family = [s for s in sigs if s.family == family]
        if of_family:
            recipe(ctx, of_family)
    if ctx.not_applicable:
        request["not_applicable"] = dict(ctx.not_applicable)
        asked = {s.label for s in sigs}
        if asked <= set(ctx.not_applicable):
            raise PlanError("; ".join(f"{s} of {region_id} is not applicable: {why}"
                                      for s, why in ctx.not_applicable.items()))
        ctx.notes += [f"{s} of {region_id}: not applicable ({why}); the other signals are "
                      f"planned" for s, why in ctx.not_applicable.items()]
    if ctx.mapped:
        ctx.add("attribute", "synthesize", "attribute",
                f"map per-PC and per-line values of "
                f"{' and '.join(t.action for t in ctx.mapped)} onto {region_id}; instructions "
                f"shared by regions are split by execution counts",
                {"runs": [t.id for t in ctx.mapped], "region_id": region_id}, ctx.mapped)

    if command is not None:
        replays.mark(ctx, capture_limit)
    p = Plan(ctx.plan_id, request, ctx.tasks, ctx.notes)
    p.tasks = p.ordered()
    _number_runs(p)
    explain_splits(p, counter, chip)
    if store is not None:
        _reuse(p, store, src, options, f"{region.program}/{region.kernel}", region.kernel, sc)
    _estimate(p, store)
    p.validate()
    return p


#: Options that pick, in the command form, which of the kernel's binaries is measured.
SELECT_KEYS = ("num_warps", "num_stages", "binary")


def binary_select(options: dict[str, str] | None) -> dict[str, str]:
    """The command form's ``--option`` values: each picks among the binaries the program
    launches (``num_warps``, ``num_stages``, ``constexpr.NAME``, ``arg.NAME`` = an argument's
    specialization such as ``i32:div16``, ``binary`` = a hash prefix);
    ``target`` pins the target as elsewhere. The program compiles its own kernel, so any other
    compile option cannot be set from outside it and is refused rather than ignored.

    Raises:
        PlanError: an option that is neither.
    """
    out: dict[str, str] = {}
    for key, value in (options or {}).items():
        if key == "target":
            continue
        if key not in SELECT_KEYS and not (key.startswith(("constexpr.", "arg."))
                                           and key.partition(".")[2]):
            raise PlanError(f"--option {key}={value}: the command form measures a binary the "
                            f"program itself compiles and launches, so {key} cannot be set "
                            f"from outside it; --option picks among the program's binaries "
                            f"by num_warps, num_stages, constexpr.NAME, arg.NAME (an "
                            f"argument's specialization, as the notes print it) or binary (a "
                            f"hash prefix), and target pins the target")
        out[key] = str(value)
    return out


def _control(ctx: PlanContext) -> Any:
    """The ``find_launch`` task every collection depends on."""
    kernel, src, region = ctx.kernel, ctx.src, ctx.region
    control = ctx.add("find_launch", "control", "find_launch",
                      f"find the launch of {kernel} in {src.name} and its completion "
                      f"(torch.cuda.synchronize); {LAUNCHES_WARMUP} warm-up launches are not "
                      f"measured, {ctx.measured} are", {
                          "kernel": kernel, "launches_warmup": LAUNCHES_WARMUP,
                          "launches_measured": ctx.measured}, [])
    if ctx.command is not None:
        control.params.update({"program": region.program, "command": list(ctx.command)})
        if ctx.select:
            control.params["select"] = dict(ctx.select)
        control.why = (f"run the command once with the launcher's Triton hooks: find the "
                       f"launches of the @triton.jit function {kernel} of module "
                       f"{region.program}, the binary the program settles on (after "
                       f"autotuning: the autotuner's chosen config), its hash, num_warps, "
                       f"num_stages, constexprs and target, and the launch to measure (the "
                       f"{LAUNCHES_WARMUP + 1}th of that binary, or its last); dump its TTGIR, "
                       f"PTX and SASS so attribution has call sites")
    return control


#: Intra-kernel coordinates that Proton instrumentation resolves (scope_event rows per CTA and
#: warp, see argusdb/collectors/proton/trace.py); others (a warp role, a loop iteration) it
#: does not.
DELIVERED_INTRA = ("cta", "sm", "warp")


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


def _estimate(p: Plan, store: Store | None) -> None:
    """Each task's estimate: the store's medians of past tasks of its action and path (replayed
    or not), else the shipped H200 medians of the command form (:data:`cost.SHIPPED_H200`)."""
    est = cost.estimates(store) if store is not None else {}
    for t in p.tasks:
        key = cost.key(t.action, bool(t.params.get("replay")), bool(t.params.get("from_control")))
        t.estimate = est.get(key) or (cost.shipped(key) if "command" in p.request else None)
