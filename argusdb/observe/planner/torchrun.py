"""Plan ``argus observe --region R --signals S -- torchrun --nproc-per-node N PROG ARGS``.

One collect task is one torchrun launch of all N ranks (a launch group); its artefacts are one
file per rank. Which launch answers which signal:

=======================  =====================================================================
signal                   launches
=======================  =====================================================================
step_time, overlap,      ``dist_events``: CUDA events (CPU: the monotonic clock) around steps,
collective_duration,     ``record_function`` ranges and collectives; timing-clean, the only
collective_bytes         launch step times and overlap are read from
exposed_communication    ``dist_events`` (observed, per step) and the perturbed variant
                         ``dist_forced`` (collectives forced synchronous) for the derived value
duration                 a step or ``record_function`` range region: ``dist_events``; a Triton
                         kernel (region): ``dist_cupti`` (CUPTI kernel records; CUDA only)
host_ops                 ``dist_profiler`` (torch.profiler CPU activity; not timing-clean)
=======================  =====================================================================

A ``dist_profiler`` launch is always planned (host ops and the collectives torch.profiler sees,
for the per-rank timeline); no step time or overlap is read from it, since host-op tracing
changes overlap (seen on 2 H200s: the overlapped program ran 1.28x slower under it, the serial
one did not change).

Example:
    >>> _ = Path("tp_block.py").write_text("import torch.distributed")  # the user's program
    >>> p = plan_torchrun("tp_block/step", ["duration", "exposed_communication"],
    ...                   ["torchrun", "--nproc-per-node", "4", "tp_block.py"], Path("."))
    >>> [(t.action, t.params.get("world_size")) for t in p.tasks][:2]
    [('torchrun_command', 4), ('dist_events', 4)]
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argusdb import environment
from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.observe.launch.torchrun import TorchrunCommand, parse
from argusdb.observe.planner.plan import Plan, PlanError, Task
from argusdb.store.embedded import Store

#: Signals of a torchrun observation → what each means.
SIGNALS: dict[str, str] = {
    "duration": "the region's duration per rank (a step or record_function range: clean span "
                "timing; a Triton kernel: CUPTI kernel records)",
    "step_time": "step duration per rank (clean timing)",
    "overlap": "compute/communication overlap per step and rank (clean timing)",
    "exposed_communication": "communication no compute covers, per step and rank (observed), "
                             "and derived from the forced-synchronous variant",
    "collective_duration": "duration of each collective instance per rank (clean timing)",
    "collective_bytes": "message size of each collective instance per rank",
    "host_ops": "torch.profiler host ops per rank (not timing-clean)",
}

#: Recorder mode (ARGUS_DIST_MODE) of each collect action.
MODES = {"dist_events": "events", "dist_forced": "forced", "dist_profiler": "profiler",
         "dist_cupti": "cupti"}

#: The program's mean step time under each mode over the program alone, as measured on 2 H200s
#: (serial / overlapped tensor-parallel block, tests/data/gpu/xlayer/analyse.txt): what a
#: launch of that mode cost there, before any history of this store exists.
COST_SEEN = {"events": "x1.005 / x1.016", "forced": "x1.199 / x1.812",
             "profiler": "x0.994 / x1.279", "cupti": "x0.997 / x0.993"}

#: Interference signature of each mode (what ``run.signature`` will say), for the plan's why.
SIGNATURES = {"events": "none (timing-clean)", "forced": "forced_wait (perturbed variant)",
              "profiler": "torch_profiler+activity_tracing (not timing-clean)",
              "cupti": "activity_tracing (timing-clean)"}


@dataclass(frozen=True)
class Target:
    """What the region id names in a distributed program.

    Attributes:
        kind: ``step`` (the program's step range), ``range`` (a ``record_function`` range) or
            ``kernel`` (a Triton kernel or a region inside one).
        region_id: as asked.
        name: the range name or the kernel name.
        source: the file whose text is the program version (the kernel's module, else the
            program's script).
    """

    kind: str
    region_id: str
    name: str
    source: Path


def _script(cmd: TorchrunCommand, cwd: Path) -> Path:
    rel = cmd.program.replace(".", "/") + ".py" if cmd.module else cmd.program
    path = cwd / rel
    if not path.is_file():
        raise PlanError(f"{cmd.program}: no such {'module' if cmd.module else 'script'} in "
                        f"{cwd} (torchrun's program, after its options)")
    return path


def resolve_target(region_id: str, cmd: TorchrunCommand, cwd: Path, program: str | Path | None,
                   step_mark: str = "step") -> Target:
    """Resolve ``region_id`` to a Triton kernel region, the step, or a ``record_function`` range.

    ``<module>/<kernel>[/<name>]`` is a Triton region when ``<module>.py`` (``--program``, the
    script itself, or found from the script's folder) declares it; ``<program>/<step_mark>`` is
    the program's step; ``<program>/<name>`` any other ``record_function`` range of the program.

    Raises:
        PlanError: the script is missing, or the id names none of these.
    """
    script = _script(cmd, cwd)
    parts = region_id.split("/")
    if len(parts) < 2 or not all(parts):
        raise PlanError(f"region {region_id!r}: expected <program>/<step or range name> or "
                        f"<module>/<kernel>[/<name>], e.g. {cmd.stem}/{step_mark}")
    candidates = [Path(program)] if program else [script, script.parent / f"{parts[0]}.py"]
    for f in candidates:
        if f.is_file() and f.stem == parts[0]:
            regions = {r.region_id: r for r in parse_regions(ProgramSource.from_path(f))}
            if region_id in regions:
                return Target("kernel", region_id, regions[region_id].kernel, f)
    if program:
        raise PlanError(f"region {region_id!r}: {Path(program).name} declares no such Triton "
                        "region (see 'argus regions FILE')")
    if parts[0] != cmd.stem or len(parts) != 2:
        raise PlanError(f"region {region_id!r}: not a Triton region of {parts[0]}.py and not a "
                        f"range of the program {cmd.stem} ({cmd.stem}/{step_mark} is its step, "
                        f"{cmd.stem}/NAME a torch.profiler.record_function range)")
    kind = "step" if parts[1] == step_mark else "range"
    return Target(kind, region_id, parts[1], script)


def _plan_id(request: dict[str, Any]) -> str:
    doc = json.dumps(request, sort_keys=True) + str(time.time_ns())
    return "p-" + hashlib.sha256(doc.encode()).hexdigest()[:10]


def estimates(store: Store, world_size: int) -> dict[str, dict[str, Any]]:
    """Recorded cost per action (``plan_cost_task``: medians of past finished tasks), for a plan
    of ``world_size`` ranks: a torchrun launch's cost grows with its ranks, so tasks of the same
    world size are taken when the store has any, else those of every world size. Each estimate
    says so in ``same_world_size``: True, False (pooled over other rank counts) or None (the
    action's tasks launch no ranks)."""
    rows = store.rows(
        "SELECT action, world_size, wall_s, gpu_s FROM plan_cost_task "
        "WHERE status = 'done' AND wall_s IS NOT NULL")
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["action"], []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for action, rs in by.items():
        same = [r for r in rs if r["world_size"] == world_size]
        pick = same or rs
        gpu = [r["gpu_s"] for r in pick if r["gpu_s"] is not None]
        out[action] = {"wall_s": _median([r["wall_s"] for r in pick]),
                       "gpu_s": _median(gpu) if gpu else None, "from_tasks": len(pick),
                       "same_world_size": True if same else False if any(
                           r["world_size"] is not None for r in rs) else None}
    return out


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return float(ys[n // 2]) if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def plan_torchrun(region_id: str, signals: list[str], command: list[str], cwd: Path,
                  store: Store | None = None, *, program: str | Path | None = None,
                  options: dict[str, str] | None = None, step_mark: str | None = None,
                  plan_id: str | None = None, timeline: bool = True,
                  reuse: bool = True, rank: int = 0, replay: bool = True,
                  capture_limit: int | None = None) -> Plan:
    """Plan the launches that answer ``signals`` of ``region_id`` in a torchrun program.

    ``step_mark`` is the name of the program's step range (``record_function``): default the
    environment's ``ARGUS_STEP_MARK``, else ``step``. With ``timeline`` False (a budget that
    cannot afford it) no ``dist_profiler`` launch is planned unless ``host_ops`` is asked for.
    With a store (and ``reuse``), a launch the store already holds for the same program version,
    recorder mode and rank count, with the rows the task answers, is reused
    (:mod:`argusdb.observe.planner.torchrun_reuse`); the notes say why others were not.

    Single-process signals of a Triton kernel region (``inst_executed``, stalls, PC sampling,
    ``exposed_latency``, a region's own ``duration``) are planned in rank ``rank`` as the
    command form plans them, with ``replay`` and ``capture_limit`` as there
    (:mod:`argusdb.observe.planner.torchrun_kernel`): their tasks follow the launches', and
    ``request.kernel`` holds that plan's request.

    Raises:
        UsageError: the torchrun command cannot be read (see :func:`torchrun.parse`).
        PlanError: unknown signal or region.
    """
    cmd = parse(command)

    step_mark = step_mark or environment.STEP_MARK.get() or "step"
    names = list(dict.fromkeys(s.strip() for s in signals if s.strip()))
    if not names:
        raise PlanError("no signals requested: name at least one, e.g. --signals "
                        "duration,exposed_communication")
    from argusdb.observe.planner import torchrun_kernel as tk
    from argusdb.schema.signals import known_names

    single = set(known_names())
    unknown = [s for s in names if s not in SIGNALS and s not in single
               and not _metric_like(s)]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], [*SIGNALS, *single], n=2, cutoff=0.6)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise PlanError(f"signal {unknown[0]!r} is not collected from a torchrun program.{hint} "
                        f"Signals: {', '.join(SIGNALS)}; and of a Triton kernel region, in one "
                        f"rank (--rank): the single-process signals (argus observe --help)")
    target = resolve_target(region_id, cmd, cwd, program, step_mark)
    if target.kind != "kernel" and any(s not in SIGNALS for s in names):
        bad = next(s for s in names if s not in SIGNALS)
        raise PlanError(f"signal {bad!r} is a signal of a Triton kernel, and {region_id} is "
                        f"the program's {target.kind} {target.name!r}: name a kernel region "
                        f"(<module>/<kernel>[/<name>], see 'argus regions FILE')")
    kernel_names = tk.kernel_signals(names, region_id) if target.kind == "kernel" else []
    world = cmd.world_size
    ranks = list(range(world))
    request: dict[str, Any] = {
        "source": target.source.name, "region": region_id, "signals": names, "scope": {},
        "command": list(command), "cwd": str(cwd.resolve()), "options": dict(options or {}),
        "distributed": {"world_size": world, "target": target.kind, "name": target.name,
                        "source_path": str(target.source.resolve()), "step_mark": step_mark}}
    pid = plan_id or _plan_id(request)
    tasks: list[Task] = []
    notes: list[str] = []

    def add(name: str, kind: str, action: str, why: str, params: dict[str, Any],
            deps: list[Task]) -> Task:
        t = Task(f"{pid}.{name}", kind, [d.id for d in deps], None, why, action, params)
        tasks.append(t)
        return t

    control = add("torchrun_command", "control", "torchrun_command",
                  f"read torchrun's options with torch's parser: {world} rank(s) on one node, "
                  f"program {cmd.program}; every launch below runs "
                  f"'{' '.join(cmd.argv())}' so each rank installs the recorder before the "
                  f"program's imports, with its own ARGUS_LAUNCH_GROUP and ARGUS_DIST_OUT",
                  {"world_size": world, "ranks": ranks, "argv": cmd.argv(),
                   "program": cmd.program, "module": cmd.module, "stem": cmd.stem}, [])

    def launch(action: str, purpose: str, signals_: list[str]) -> Task:
        mode = MODES[action]
        group = f"{pid}.{mode}"
        suffix = "spans.jsonl" if mode in ("events", "forced") else "kineto.json.gz"
        return add(action, "collect", action,
                   f"{purpose}; one torchrun launch of {world} rank(s) with ARGUS_DIST_MODE="
                   f"{mode} (signature {SIGNATURES[mode]}), launch group {group}; a run of its "
                   f"own because " + _apart(mode),
                   {"mode": mode, "launch_group": group, "world_size": world, "ranks": ranks,
                    "signals": signals_, "step_mark": step_mark,
                    "step_time_cost_seen_2xH200": COST_SEEN[mode],
                    "artefacts": [f"{cmd.stem}.rank{r}.{suffix}" for r in ranks]}, [control])

    clean_sigs = [s for s in names if s in ("step_time", "overlap", "exposed_communication",
                                            "collective_duration", "collective_bytes")]
    if "duration" in names and target.kind != "kernel":
        clean_sigs.append("duration")
    events = launch("dist_events", "timing-clean steps, record_function ranges and collectives "
                    "(op, bytes, group, sequence number) per rank: step time and overlap are "
                    "read from this launch only", clean_sigs or ["step_time"])
    collects = [events]
    if "exposed_communication" in names:
        variant = add("collectives_forced_sync", "transform", "collectives_forced_sync",
                      "perturbed variant for the derived exposed_communication: the recorder "
                      "forces every collective synchronous at run time (device drained before, "
                      "host waits after), so no compute overlaps it; same program version, its "
                      "runs carry forced_wait", {"transform": "collectives_forced_sync"},
                      [control])
        forced = launch("dist_forced", "the forced-synchronous variant: exposed_communication = "
                        "median(clean step) - (median(forced step) - median(forced "
                        "communication)), first step and Tukey outliers dropped",
                        ["exposed_communication"])
        forced.depends_on.append(variant.id)
        collects.append(forced)
    if timeline or "host_ops" in names:
        collects.append(launch("dist_profiler", "host ops and collectives per rank as "
                               "torch.profiler records them, for the per-rank timeline; never "
                               "read for step time or overlap", ["host_ops"]))
    else:
        notes.append("no dist_profiler launch (the budget cannot afford it and no requested "
                     "signal needs it): the per-rank timeline shows no host ops")
    cupti_sigs: list[str] = [s for s in ("duration", "exposed_communication") if s in names
                  and (s != "duration" or target.kind == "kernel")]
    if cupti_sigs:
        uses = []
        if "duration" in cupti_sigs:
            uses.append(f"the duration of {target.name} per rank")
        if "exposed_communication" in cupti_sigs:
            uses.append("the communication no compute covers on any stream (NCCL kernels "
                        "against every other kernel)")
        collects.append(launch("dist_cupti", "kernel records of every stream (CUPTI activity "
                               f"only, no host ops) per rank: {' and '.join(uses)}; needs "
                               "CUDA", cupti_sigs))
    if "duration" in names and target.kind == "kernel":
        own = (f"; the region's own time comes from the rank's kernel plan (Proton "
               f"instrumentation of a replay of rank {rank}'s launch)"
               if "duration" in kernel_names else "")
        notes.append(f"duration of {region_id}: per rank, taken for the kernel {target.name} "
                     f"from CUPTI kernel records{own}; on a host without CUDA the per-rank "
                     "answer is 'insufficient'")
    if "exposed_communication" in names:
        notes.append(exposure_note(step_mark))
    add("dist_overlap", "synthesize", "dist_overlap",
        "refresh the interval views and derivations, then answer per rank: step time and "
        "exposed communication from the clean launch, derived exposed communication from the "
        "forced one, clock alignment error, critical rank",
        {"signals": names, "launch_groups": [t.params["launch_group"] for t in collects]},
        collects)
    p = Plan(pid, request, tasks, notes)
    p.tasks = p.ordered()
    n = 0
    for t in p.tasks:
        if t.kind == "collect":
            n += 1
            t.run = f"r{n}"
    if store is not None and reuse:
        _reuse(store, p, target, world, step_mark, options)
    if store is not None:
        est = estimates(store, world)
        for t in p.tasks:
            t.estimate = est.get(t.action)
    if kernel_names:
        tk.merge(p, tk.plan_rank_kernel(pid, region_id, kernel_names, list(command), cwd,
                                        target.source, rank, world, store, options, replay,
                                        capture_limit))
    p.validate()
    return p


def exposure_note(step_mark: str) -> str:
    """What the plan answers exposed_communication from, and why (no step is assumed)."""
    return ("exposed_communication: over each rank's measured window (first to last interval "
            "of its run; no step boundary needed), the communication no compute covers: on a "
            "CUDA host from the dist_cupti launch's kernel records (NCCL kernels against every "
            "other kernel, on any stream of the rank), else from the dist_events launch's "
            "collective spans against its record_function compute spans (a synchronous gloo "
            "collective blocks the rank's one thread); per step where the clean launch records "
            f"'{step_mark}' ranges (record_function, ARGUS_STEP_MARK), else per step found "
            "from the repetition of the rank's kernel (or collective) sequence, and none "
            "where the sequence does not repeat; derived from the forced-synchronous "
            "variant where steps are marked")


def _metric_like(name: str) -> bool:
    """A name shaped like an Nsight Compute metric (``base.rollup``), checked by the kernel
    plan against the chip's list."""
    return "__" in name and "." in name


def _reuse(store: Store, p: Plan, target: Target, world: int, step_mark: str,
           options: dict[str, str] | None) -> None:
    """Mark the collect tasks a stored launch group answers
    (:mod:`argusdb.observe.planner.torchrun_reuse`):
    same program version, same recorder mode, same rank count, rows that answer the task."""
    from argusdb.observe.planner import torchrun_reuse as reuse
    from argusdb.observe.planner.reuse import parent_versions

    versions = parent_versions(store, ProgramSource.from_path(target.source),
                               {str(k): str(v) for k, v in options.items()} if options else None)
    groups: dict[str, str] = {}
    for t in p.tasks:
        if t.kind != "collect":
            continue
        hit, why_not = reuse.find(store, t, versions, target, world, step_mark)
        p.notes.extend(why_not)
        if hit is not None:
            t.reuse = hit
            groups[t.params["launch_group"]] = hit["launch_group"]
    if not versions.ids:
        p.notes.append(f"no stored launch reused: no stored runs of {versions.why}" if options
                       else f"no stored launch reused: {versions.why}")
    elif not groups:
        p.notes.append("no stored launch reused: no launch of this version has the plan's "
                       "recorder mode, rank count and rows")
    for t in p.tasks:
        if t.action == "dist_overlap":
            t.params["launch_groups"] = [groups.get(g, g) for g in t.params["launch_groups"]]


def _apart(mode: str) -> str:
    return {
        "events": "clean timing must not share a process with host-op tracing or forced "
                  "waits",
        "forced": "forcing collectives synchronous removes the overlap the clean launch "
                  "measures",
        "profiler": "host-op tracing perturbs step time and overlap (not timing-clean)",
        "cupti": "kernel records come from CUPTI activity, which the clean span timing does "
                 "not run",
    }[mode]


def trim(p: Plan, budget_s: float, replan: Any) -> Plan:
    """Fit a torchrun plan to ``budget_s`` estimated wall seconds (recorded costs, see
    :func:`estimates`), as :func:`argusdb.observe.trim` fits a single-process plan: first the
    ``dist_profiler`` launch when no requested signal needs it (it only draws host ops on the
    per-rank timeline), then, one at a time, the signal whose own launches cost most.
    ``replan(signals, timeline)`` plans again. ``notes`` say what was dropped and why;
    ``request.dropped_signals`` and ``request.dropped_launches`` list it.

    Raises:
        PlanError: a task has no recorded cost, or even the smallest plan is over the budget.
    """
    from argusdb.observe.observation import estimate
    from argusdb.observe.observation import trim as trim_signals

    signals = list(p.request["signals"])
    est = estimate(p)
    dropped: list[str] = []
    notes: list[str] = []
    prof = [t for t in p.tasks if t.action == "dist_profiler"]
    if not est["unknown"] and est["wall_s"] > budget_s and prof and "host_ops" not in signals:
        q = replan(signals, False)
        saved = est["wall_s"] - estimate(q)["wall_s"]
        notes.append(f"dropped the dist_profiler launch: the plan was estimated at "
                     f"{est['wall_s']:.3g} s, over the budget of {budget_s:g} s, and no requested "
                     f"signal needs it (it draws host ops on the per-rank timeline); it saves "
                     f"{saved:.3g} s of recorded launch costs")
        dropped.append("dist_profiler")
        p = q
    p = trim_signals(p, budget_s, lambda sigs: replan(sigs, not dropped))
    p.notes[:0] = notes
    p.request["dropped_launches"] = dropped
    return p
