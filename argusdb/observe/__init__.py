"""``observe(region, signals, scope)``: the front door. Plan, run on the GPU, store, answer.

The planner (:mod:`argusdb.observe.planner`) turns the request into a DAG of tasks; the runner
(``argusdb.observe.runner.execute``, on a GPU host) runs them in topological order, ingests each
artefact with its program version and records each task's cost; ``observe`` then returns the
evidence of the plan's runs (Arrow) and a report. ``dry_run=True`` only plans: no GPU needed.

A program is observed unmodified: ``run=["python3", "model.py"]`` (or a module-level function)
is run again for every task under the launcher's Triton hooks (:mod:`argusdb.observe.launch`,
:mod:`argusdb.observe.runner.command`). A kernel file with a launch harness (``source=...``, no
``run``)
is the other way to provide a launch.

Example:
    >>> obs = observe("softmax/softmax_fwd", ["duration", "inst_executed"],
    ...               run=["python3", "softmax.py"], dry_run=True, store="argus.duckdb")
    >>> [t.action for t in obs.plan.tasks]
    ['find_launch', 'cupti_timing', 'ncu_source', 'attribute']
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argusdb import environment
from argusdb.errors import NoGpuError, RunnerMissingError, UsageError
from argusdb.observe.gpu import has_gpu
from argusdb.observe.observation import (  # noqa: F401  (the public names of observe)
    WORK_MARKER,
    Observation,
    _plan_report,
    estimate,
    mark_work_folder,
    observation_store,
    trim,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from argusdb.observe.planner.plan import Plan
    from argusdb.store.embedded import Store


def observe(region: str, signals: str | list[str], scope: dict[str, str] | None = None, *,
            store: str | Path | Store | None = None, source: str | Path | None = None,
            run: Callable[[], Any] | Sequence[str] | None = None,
            cwd: str | Path | None = None, budget_s: float | None = None,
            dry_run: bool = False, options: dict[str, str] | None = None,
            workdir: str | Path | None = None, progress: bool | None = None,
            replay: bool = True, capture_limit: int | str | None = None,
            rank: int | None = None) -> Observation:
    """Observe ``signals`` of ``region`` at ``scope``: plan, run, store and return evidence.

    Args:
        region: region id ``<program>/<kernel>[/<name>]`` of ``source``.
        signals: names, as a list or comma-separated (see :mod:`argusdb.schema.signals`).
        scope: coordinate → value, e.g. ``{"warp": "each"}``; ``all`` where not given.
        store: store path (created when running) or an open Store; evidence already there is
            reused. A dry run without a store plans everything.
        source: the Triton kernel source file. With ``run``: optional (``--program``); found
            by the region's module name from the command's directory when not given.
            Without ``run``: a kernel file that follows the harness contract.
        run: the program to observe, unmodified: an argv (``["python", "prog.py"]``) or a
            module-level function (run as ``python -c`` importing its module). Every run of
            the plan runs it again under the launcher's Triton hooks.
        cwd: the command's working directory (default: the current one).
        budget_s: trim the plan to this many estimated wall seconds (see :func:`trim`).
        dry_run: only plan (needs no GPU).
        options: compile options and ``target`` that pin the program version (see ingest).
        workdir: where the runner writes artefacts (default: ``<store>.runs/<plan_id>``).
        progress: progress bar (default: on a terminal).
        replay: with ``run``, run the program once and collect what needs only the kernel on
            replays of the captured launch (:mod:`argusdb.observe.planner.replays`); False runs
            the program again for every collection (``--no-replay``).
        capture_limit: bytes the capture may copy, an int or text such as ``512M``/``4G``
            (``--capture-limit``; default 4 GiB); over it the plan falls back to runs.
        rank: with a torchrun command, the rank in which the single-process signals of a
            kernel region are measured (``--rank``, default 0); the other ranks run unchanged.

    Raises:
        PlanError: the request cannot be planned.
        NoGpuError: not a dry run, and there is no GPU here.
        RunnerMissingError: not a dry run, and this build has no runner.
    """
    from argusdb.observe.planner import plan as make_plan

    names = [s.strip() for s in signals.split(",")] if isinstance(signals, str) else signals
    command: list[str] | None = None
    limit: int | None = None
    if capture_limit is not None:
        from argusdb.observe.launch.capture import limit_bytes

        try:
            limit = limit_bytes(capture_limit)
        except ValueError as exc:
            raise UsageError(f"--capture-limit {capture_limit}: not a size (give bytes, "
                             f"or a number with K, M, G or T, e.g. 4G)") from exc
    wd = Path(cwd) if cwd is not None else Path.cwd()
    if run is not None:
        command = command_argv(run)
        check_command(command, wd)
        from argusdb.observe.launch.torchrun import is_torchrun

        if is_torchrun(command):  # every rank under the recorder (argusdb.observe.launch.recorder)
            return _observe_torchrun(region, names, scope, command, wd, store, source, options,
                                     dry_run, workdir, progress, budget_s,
                                     {"rank": rank or 0, "replay": replay,
                                      "capture_limit": limit})
        source = source or resolve_source(region, command, wd)
    if rank is not None:
        raise UsageError(f"--rank {rank}: only a torchrun command has ranks (argus observe "
                         "... --rank R -- torchrun --nproc-per-node N PROG)")
    elif source is None:
        raise UsageError("observe needs a command to run (run=[...] / '-- COMMAND') or a "
                         "harness kernel file (source=...)")
    if not dry_run:
        _check_can_run()
    with observation_store(store, dry_run) as st:
        kw: dict[str, Any] = {"options": options}
        if command is not None:
            from argusdb.observe.launch.capture import limit_bytes

            kw.update({"command": command, "cwd": str(wd.resolve()), "replay": replay,
                       "capture_limit": limit if limit is not None else limit_bytes(None)})
        p = make_plan(source, region, names, scope, st, **kw)
        if budget_s is not None:
            p = trim(p, budget_s, lambda sigs: make_plan(source, region, sigs, scope, st, **kw))
        if dry_run:
            return Observation(p, None, _plan_report(p))
        assert st is not None
        return _run(p, st, Path(source), workdir, progress)


def _observe_torchrun(region: str, names: list[str], scope: dict[str, str] | None,
                      command: list[str], wd: Path, store: str | Path | Store | None,
                      program: str | Path | None, options: dict[str, str] | None, dry_run: bool,
                      workdir: str | Path | None, progress: bool | None,
                      budget_s: float | None, kernel: dict[str, Any]) -> Observation:
    if scope and any(v != "all" for v in scope.values()):
        raise UsageError(f"--scope {scope}: a torchrun observation answers per rank and per "
                         "step; intra-kernel scopes need the harness form")
    from argusdb.observe.torchrun import observe_torchrun

    obs: Observation = observe_torchrun(region, names, command, wd, store, program=program,
                                        options=options, dry_run=dry_run, workdir=workdir,
                                        progress=progress, budget_s=budget_s, **kernel)
    return obs


def command_argv(run: Callable[[], Any] | Sequence[str]) -> list[str]:
    """The argv of ``run``: itself, or for a function, a Python that imports and calls it."""
    import sys

    if isinstance(run, str):
        raise UsageError(f"run={run!r}: give the command as a list of arguments "
                         f"(e.g. ['python', 'prog.py']), not one string")
    if not callable(run):
        argv = [str(a) for a in run]
        if not argv:
            raise UsageError("the command to observe is empty: put it after '--'")
        return argv
    import inspect

    mod = getattr(run, "__module__", None)
    qual = getattr(run, "__qualname__", "")
    if not mod or "<" in qual:
        raise UsageError(f"run={run!r}: a function to observe must be defined at module level "
                         f"(a lambda or nested function cannot be run again in a new process)")
    if mod == "__main__":
        path = inspect.getsourcefile(run)
        if path is None:
            raise UsageError("run: the function's file is unknown; pass an argv instead")
        code = (f"import runpy; g = runpy.run_path({path!r}, run_name='argus_observed'); "
                f"g[{qual!r}]()")
    else:
        code = f"import importlib; importlib.import_module({mod!r}).{qual}()"
    return [sys.executable, "-c", code]


def check_command(argv: list[str], cwd: Path) -> None:
    """Refuse a command that cannot start: an unknown program, or a Python script not there."""
    exe = argv[0]
    if shutil.which(exe) is None and not (cwd / exe).exists():
        raise UsageError(f"the command {exe!r} is not found (not on PATH, not in {cwd})")
    if Path(exe).name.startswith("python") and len(argv) > 1 and argv[1].endswith(".py"):
        if not (cwd / argv[1]).is_file():
            raise UsageError(f"{argv[1]}: no such script in {cwd}; check the path after "
                             f"'{exe}'")


_SKIP = {".git", ".venv", "venv", "site-packages", "node_modules", "__pycache__", ".tox"}




def _own_work(path: Path, top: Path) -> bool:
    """Whether ``path`` lies in a folder argusdb's runner wrote (a marked plan folder, or a
    ``<store>.runs`` folder beside its store, written before folders were marked)."""
    for parent in path.parents:
        if parent == top or top not in parent.parents:
            break
        if (parent / WORK_MARKER).is_file() or (
                parent.name.endswith(".runs") and parent.with_suffix("").is_file()):
            return True
    return False


def resolve_source(region: str, argv: list[str], cwd: Path) -> Path:
    """The kernel's module file for a region id: ``<module>.py`` in the command's folder (the
    script's folder, then the working directory), else below the first of them that has one
    (argusdb's own task folders, virtual environments and caches left out).

    Raises:
        UsageError: no such module, or several in one tree (then ``--program`` says which).
    """
    module = region.split("/", 1)[0]
    dirs: list[Path] = []
    for a in argv[1:]:
        if a.endswith(".py") and (cwd / a).is_file():
            dirs.append((cwd / a).resolve().parent)
    dirs.append(cwd.resolve())
    dirs = list(dict.fromkeys(dirs))
    for d in dirs:
        if (d / f"{module}.py").is_file():
            return d / f"{module}.py"
    found: set[Path] = set()
    for d in dirs:
        found = {p.resolve() for p in d.rglob(f"{module}.py")
                 if not _SKIP & set(p.relative_to(d).parts) and not _own_work(p, d)}
        if found:
            break
    if len(found) == 1:
        return found.pop()
    where = ", ".join(str(d) for d in dirs)
    if found:
        raise UsageError(f"region {region}: {len(found)} files named {module}.py under {where} "
                         f"({', '.join(sorted(map(str, found)))}); pass --program FILE")
    raise UsageError(f"region {region}: no module {module}.py in or under {where} (the region "
                     f"id starts with the module that defines the kernel); pass --program FILE")


def _check_can_run() -> None:
    # ARGUS_REPLAY names recorded bundles the runner answers collections from: no GPU needed.
    if not has_gpu() and not environment.REPLAY.get():
        raise NoGpuError("no NVIDIA GPU on this machine: observe runs its plan on a GPU. Use "
                         "--dry-run (dry_run=True) to see the plan here, or run on a GPU host "
                         "(or set ARGUS_REPLAY to recorded bundles to replay them).")
    import importlib

    try:
        importlib.import_module("argusdb.observe.runner")
    except ImportError as exc:
        if exc.name == "argusdb.observe.runner":
            raise RunnerMissingError(
                "this build of argusdb has no GPU runner (argusdb.observe.runner): a GPU runner is "
                "needed to execute plans. Install argusdb with the runner (argusdb[gpu]) or use "
                "--dry-run.") from exc
        raise RunnerMissingError(
            f"the GPU runner (argusdb.observe.runner) cannot be imported: {exc}. Install the GPU "
            f"dependencies (pip install 'argusdb[gpu]') or use --dry-run.") from exc


def _run(p: Plan, st: Store, source: Path, workdir: str | Path | None,
         progress: bool | None) -> Observation:
    import importlib

    runner = importlib.import_module("argusdb.observe.runner")  # checked by _check_can_run

    collect = [t for t in p.tasks if t.kind == "collect"]
    st.insert_row("plan", {
        "plan_id": p.plan_id, "source_name": source.name, "region_id": p.request["region"],
        "signals": p.request["signals"], "scope": p.request["scope"], "plan": p.to_json(),
        "n_tasks": len(p.tasks), "n_reused": sum(1 for t in collect if t.reuse),
        "created_at": datetime.now(UTC).replace(tzinfo=None)})
    wd = mark_work_folder(Path(workdir) if workdir else Path(f"{st.path}.runs") / p.plan_id)
    import sys

    runner.execute(p.to_json(), st, source, wd,
                   sys.stderr.isatty() if progress is None else progress)
    return Observation(p, evidence_of(p, st), report(p, st))


def evidence_of(p: Plan, st: Store) -> pa.Table:
    """Evidence of the plan's tasks and reused runs: requested signals, the region's rows.

    The region's rows are those keyed to it, to a region inside it, to its kernel (a clean
    kernel timing next to a region's), and the kernel's rows not yet attributed (per PC/line).
    """
    tasks = [t.id for t in p.tasks]
    # Runs the plan reused, and runs its tasks produced, including artefacts the store already
    # held (an ingest of the same bytes is a no-op, so their rows keep the earlier task's id).
    runs = list(reused_runs(p, st).values())
    for row in st.rows("SELECT config FROM task WHERE plan_id = ?", [p.plan_id]):
        runs += json.loads(row["config"] or "{}").get("runs") or []
    # What the tasks yield (e.g. scope_cycles for an instrumented 'duration'), and what was asked.
    signals = sorted({s.removesuffix("@proton") for s in p.request["signals"]}
                     | {s for t in p.tasks for s in t.params.get("signals", [])})
    region = p.request["region"]
    kernel = p.task(tasks[0]).params["kernel"]
    kernel_region = "/".join(region.split("/")[:2])
    return st.arrow(
        "SELECT * FROM evidence WHERE (list_contains(?, task_id) OR list_contains(?, run_id)) "
        "AND list_contains(?, signal) AND (region_id IN (?, ?) OR starts_with(region_id, ?) "
        "OR (region_id IS NULL AND kernel = ?)) ORDER BY evidence_id",
        [tasks, runs, signals, region, kernel_region, region + "/", kernel])


def reused_runs(p: Plan, st: Store) -> dict[str, str]:
    """The run each reused task stands on, by task id: a planned reuse counts only where the
    runner kept it (status ``reused``). A command plan's reuse is planned from the source text
    before the program ran; where the control task then found another binary (the same source
    under torch.compile and eagerly), the runner refuses it and the task measures afresh, so
    the earlier version's run is no evidence of this plan."""
    status = {r["task_id"]: r["status"] for r in st.rows(
        "SELECT task_id, status FROM task WHERE plan_id = ?", [p.plan_id])}
    return {t.id: t.reuse["run_id"] for t in p.tasks if t.reuse and t.reuse.get("run_id")
            and status.get(t.id, "reused") == "reused"}


def report(p: Plan, st: Store) -> dict[str, Any]:
    """Status and cost of each task (from the task table) and evidence counts per class."""
    rows = {r["task_id"]: r for r in st.rows(
        "SELECT task_id, status, wall_s, gpu_s, config FROM task WHERE plan_id = ?",
        [p.plan_id])}
    reused = reused_runs(p, st)
    ev = evidence_of(p, st)
    counts: dict[str, dict[str, int]] = {}
    for sig, cls in zip(ev.column("signal").to_pylist(), ev.column("evidence_class").to_pylist(),
                        strict=True):
        counts.setdefault(sig, {}).setdefault(cls, 0)
        counts[sig][cls] += 1
    tasks = [{"id": t.id, "action": t.action, "run": t.run, "runs_program": t.runs_program,
              "status": rows.get(t.id, {}).get("status", "reused" if t.reuse else "missing"),
              "wall_s": rows.get(t.id, {}).get("wall_s"), "gpu_s": rows.get(t.id, {}).get("gpu_s"),
              "reuse": t.reuse if t.id in reused else None,
              **({"reuse_refused": json.loads(rows[t.id]["config"] or "{}").get(
                  "detail", {}).get("reuse_refused")}
                 if t.reuse and t.id not in reused and t.id in rows else {})}
             for t in p.tasks]
    failed = []
    for t in tasks:
        if t["status"] in ("done", "reused"):
            continue
        cfg = json.loads(rows.get(t["id"], {}).get("config") or "{}")
        detail = cfg.get("detail") or {}
        failed.append({"task": t["id"], "action": t["action"], "status": t["status"],
                       "error": detail.get("error") or detail.get("reason")
                       or "the runner recorded no row for this task",
                       "evidence_stored": {"runs": cfg.get("runs") or [],
                                           "program_version": cfg.get("program_version")}})
    return {"plan_id": p.plan_id, "ok": not failed, "failed": failed, "tasks": tasks,
            "evidence": counts, "attribution": attribution_verdict(p, st),
            **({"replay": replay_summary(p, rows)} if "command" in p.request else {}),
            "not_applicable": p.request.get("not_applicable") or {},
            "notes": p.notes + _binary_notes(p, rows) + _probe_notes(ev),
            "wall_s": sum(t["wall_s"] or 0 for t in tasks),
            "gpu_s": sum(t["gpu_s"] or 0 for t in tasks)}


def replay_summary(p: Plan, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How a command plan collected: whether replay was planned, which tasks ran the program
    (``runs_program`` as planned, and as run: a fall-back runs it), the fall-backs with their
    reasons, and which duration is which (in-context: the program's launches; replay: the
    captured launch, isolated)."""
    planned = bool(p.request.get("replay"))
    fallbacks: dict[str, str] = {}
    ran_program: list[str] = []
    for t in p.tasks:
        detail = json.loads(rows.get(t.id, {}).get("config") or "{}").get("detail") or {}
        if detail.get("replay_fallback"):
            fallbacks[t.id] = str(detail["replay_fallback"])
        if t.runs_program or t.id in fallbacks:
            ran_program.append(t.id)
    durations = {t.id: ("in-context (the program's launches)" if t.params.get("from_control")
                        or not t.params.get("replay") else
                        "replay (the captured launch, isolated: launch_replay)")
                 for t in p.tasks if t.action == "cupti_timing"}
    return {"planned": planned, "program_runs": len(ran_program), "ran_program": ran_program,
            "fallbacks": fallbacks, "durations": durations}


def _probe_notes(ev: Any) -> list[str]:
    """How to read each derived value whose forced-wait variant is not the parent plus the wait
    alone in machine code (or could not be compared): ``variants.footprint_note``."""
    from argusdb.ingest.variants import footprint_note

    out = []
    for cls, region, value, lineage in zip(
            *(ev.column(c).to_pylist() for c in ("evidence_class", "region_id", "value",
                                                 "lineage")), strict=True):
        if cls != "derived" or not lineage:
            continue
        note = footprint_note(json.loads(lineage).get("conditions") or {})
        if note:
            out.append(f"exposed_latency of {region} ({value:.0f} ns): {note}")
    return out


def _binary_notes(p: Plan, rows: dict[str, dict[str, Any]]) -> list[str]:
    """Where the command launched the kernel as several binaries (other shapes, constexprs,
    warps): which one the plan measured, how it was picked, and how to pick another."""
    control = next((t for t in p.tasks if t.action == "find_launch"), None)
    if control is None or "command" not in p.request or control.id not in rows:
        return []
    from argusdb.observe.runner.command import describe_binaries

    detail = json.loads(rows[control.id].get("config") or "{}").get("detail") or {}
    binaries = detail.get("program_binaries") or []
    measured = (detail.get("binary") or {}).get("hash")
    if len(binaries) < 2 or not measured:
        return []
    kernel = control.params["kernel"]
    return [f"{kernel}: the program launched {describe_binaries(binaries)}. Measured "
            f"binary={measured[:12]}, picked by {detail.get('selected_by')}: every run "
            f"measures that binary only; --option with the values above picks another"]


def attribution_verdict(p: Plan, st: Store) -> dict[str, Any]:
    """Per attributed signal of the plan's runs: observed total, the share no region owns
    (``_unattributed``: instructions without a call site in the kernel's regions), and
    ``sufficient`` only when that share is 0 and attributed equals observed."""
    runs = [r for t in p.tasks if t.action == "attribute" for r in t.params.get("runs", [])]
    if not runs:
        return {}
    ids = st.rows("SELECT config FROM task WHERE list_contains(?, task_id)", [runs])
    run_ids = [r for row in ids for r in json.loads(row["config"] or "{}").get("runs") or []]
    run_ids += [r for t, r in reused_runs(p, st).items() if t in runs]
    out: dict[str, Any] = {}
    for r in st.rows(
            "SELECT c.signal, sum(c.observed) AS observed, sum(c.attributed) AS attributed, "
            "(SELECT coalesce(sum(a.value), 0) FROM region_attribution a WHERE "
            "list_contains(?, a.run_id) AND a.signal = c.signal AND "
            "ends_with(a.region_id, '/_unattributed')) AS unattributed "
            "FROM attribution_conservation c WHERE list_contains(?, c.run_id) AND "
            "list_contains(?, c.signal) GROUP BY c.signal ORDER BY c.signal",
            [run_ids, run_ids, [s.removesuffix("@proton") for s in p.request["signals"]]]):
        share = (r["unattributed"] / r["observed"]) if r["observed"] else None
        exact = r["attributed"] == r["observed"]
        out[r["signal"]] = {
            "observed": r["observed"], "attributed": r["attributed"],
            "unattributed_share": share,
            "verdict": "sufficient" if exact and share == 0 else "insufficient",
            **({} if exact and share == 0 else {"why": (
                f"{share * 100:.1f} % of {r['signal']} has no call site in the kernel's regions "
                f"(_unattributed)" if share else "attributed and observed totals differ")})}
    return out


def plan_json(p: Plan) -> str:
    """The ``--dry-run --json`` document: ``{"tasks": [...]}``."""
    return json.dumps({"tasks": [t.to_json() for t in p.tasks], "notes": p.notes,
                       "request": p.request})
