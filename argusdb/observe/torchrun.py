"""Run a torchrun observation plan (:mod:`argusdb.observe.planner.torchrun`): launch, ingest,
answer.

Each collect task is one ``torchrun`` launch of every rank under the recorder
(``ARGUS_DIST_MODE`` = the task's mode, ``ARGUS_DIST_OUT`` = its folder, ``ARGUS_LAUNCH_GROUP``
= its launch group); when it exits 0 and every rank wrote its artefact, the folder is ingested
as one launch group bound to the task (:func:`argusdb.ingest.ranks.ingest_launch`). A
launch that fails, or runs past ``ARGUS_DIST_TIMEOUT_S`` seconds (stopped with every rank it
started), stores nothing. A ``cupti`` launch on a host without an NVIDIA GPU is not
started: its task is ``insufficient`` (kernel records need CUPTI), and so is every signal only it
answers. With ``ARGUS_DIST_REPLAY=DIR`` every launch is answered from a recorded one
(``DIR/<mode>/``, see :func:`_replay`) instead. Every task gets a row in ``task`` with its
wall seconds (and GPU seconds: wall × ranks on a GPU host).

Example:
    >>> p = plan_torchrun("prog/step", ["step_time"], ["torchrun",  # doctest: +SKIP
    ...                   "--nproc-per-node", "2", "prog.py"], Path("."))
    >>> results = execute(p, store, Path("work"))  # doctest: +SKIP
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argusdb import environment
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import ArgusError, UsageError
from argusdb.ingest.ranks import LaunchResult, ingest_launch
from argusdb.observe.gpu import has_gpu
from argusdb.observe.planner.plan import Plan, Task
from argusdb.store import materialize
from argusdb.store.embedded import Store

#: Task statuses that are not failures: the task ran, was not needed, or could not be run on
#: this host for a stated reason (``insufficient``).
OK_STATUSES = ("done", "reused", "insufficient")


@dataclass
class LaunchOutcome:
    """What one task did (one row of ``task``)."""

    task_id: str
    action: str
    status: str = "done"
    wall_s: float = 0.0
    gpu_s: float | None = None
    program_version: str | None = None
    run_ids: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


def _env(task: Task, out: Path) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds argusdb/: -m boot
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, environment.DIST_MODE.name: task.params["mode"],
            environment.DIST_OUT.name: str(out),
            environment.LAUNCH_GROUP.name: task.params["launch_group"],
            environment.STEP_MARK.name: task.params.get("step_mark", "step"),
            "PYTHONPATH": os.pathsep.join(p for p in (root, path) if p)}


def _tail(text: str, n: int = 8) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def _replay(p: Plan, task: Task, store: Store, root: Path, res: LaunchOutcome) -> None:
    """Answer a launch from a recorded one: ``ARGUS_DIST_REPLAY/<mode>/`` holds every rank's
    artefact of a launch of that mode (as ``tools/h200/xlayer/run.sh`` records them). The
    recorded launch keeps its own launch group."""
    mode = task.params["mode"]
    folder = root / mode
    if not folder.is_dir():
        res.status = "failed"
        res.detail["error"] = (f"ARGUS_DIST_REPLAY={root}: no recorded {mode} launch "
                               f"({folder} is missing); nothing stored")
        return
    launch = _store_launch(p, task, store, folder, res)
    res.detail.update({"mode": mode, "launch_group": launch.launch_group,
                       "replayed_from": str(folder)})


def _store_launch(p: Plan, task: Task, store: Store, folder: Path, res: LaunchOutcome,
                  launch_group: str | None = None) -> LaunchResult:
    """Ingest every rank's artefact in ``folder`` as one launch of the plan's program (under
    ``launch_group``, else the group the artefacts name) and record its runs in ``res``."""
    dist = p.request["distributed"]
    opts = {str(k): str(v) for k, v in (p.request.get("options") or {}).items()}
    launch = ingest_launch(store, folder, ProgramSource.from_path(dist["source_path"]),
                           opts or None, launch_group, task_id=task.id,
                           world_size=int(task.params["world_size"]))
    res.run_ids = [r.run_id for r in launch.runs]
    # a Kineto trace's kernels that are not the program's sit in a timeline run of their own
    res.run_ids += [str(r.other["run_id"]) for r in launch.runs if r.other]
    res.program_version = launch.runs[0].program_version if launch.runs else None
    return launch


def _stop(proc: subprocess.Popen[bytes], out: Path) -> None:
    """Stop a launch and every rank it started: SIGTERM to torchrun (its agent stops its
    workers), SIGKILL to its session after a grace period, then to each rank the recorder
    registered (``.rank<R>.pid``: torchrun starts workers in sessions of their own)."""
    import signal

    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for f in out.glob(".rank*.pid"):
        try:
            pid = int(f.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"argusdb.observe.launch.rank_boot" in cmdline:  # not a pid reused since
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass  # gone already (or no /proc here)
        f.unlink(missing_ok=True)


def _collect(p: Plan, task: Task, store: Store, workdir: Path, res: LaunchOutcome,
             timeout_s: float | None) -> None:
    mode = task.params["mode"]
    replay = environment.DIST_REPLAY.get()
    if replay:
        _replay(p, task, store, Path(replay), res)
        return
    if mode == "cupti" and not has_gpu():
        res.status = "insufficient"
        res.detail["reason"] = ("no NVIDIA GPU on this host: kernel records need CUDA and CUPTI "
                                "activity, so no kernel duration is collected (nothing stored)")
        return
    argv = list(next(t for t in p.tasks if t.action == "torchrun_command").params["argv"])
    out = workdir / task.id.removeprefix(p.plan_id + ".")
    out.mkdir(parents=True, exist_ok=True)
    cwd = p.request.get("cwd") or "."
    log = out / "torchrun.log"
    res.detail.update({"argv": argv, "mode": mode, "launch_group": task.params["launch_group"],
                       "log": str(log)})
    # Output to a file, not a pipe: a rank that outlives torchrun cannot block the reading.
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(argv, cwd=cwd, env=_env(task, out), stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc, out)
            res.status = "failed"
            res.detail["error"] = (f"the launch ran past {timeout_s:g} s "
                                   f"(ARGUS_DIST_TIMEOUT_S) and was stopped with its ranks; "
                                   f"nothing stored; log: {log}")
            return
    text = log.read_text(encoding="utf-8", errors="replace")
    for f in out.glob(".rank*.pid"):
        f.unlink(missing_ok=True)
    res.detail["returncode"] = proc.returncode
    if proc.returncode != 0:
        res.status = "failed"
        res.detail["error"] = (f"torchrun exited {proc.returncode}: {_tail(text)}; nothing "
                               f"stored; log: {log}")
        return
    launch = _store_launch(p, task, store, out, res, task.params["launch_group"])
    res.detail["artefacts"] = [{"file": Path(r.path).name, "kind": r.kind, "rows": r.rows}
                               for r in launch.runs]


def _synthesize(store: Store, res: LaunchOutcome) -> None:
    with store.transaction():
        rep = materialize.refresh(store)
    res.detail.update({"refreshed_versions": rep.rebuilt_versions,
                       "derivation_rebuilt": rep.derivation_rebuilt})


def execute(p: Plan, store: Store, workdir: Path,
            timeout_s: float | None = None) -> list[LaunchOutcome]:
    """Run the plan's tasks in order (a line per task on stderr); a task whose dependency
    failed is ``skipped``."""
    from argusdb.observe.planner.torchrun_kernel import kernel_plan

    kp = kernel_plan(p)
    own = set() if kp is None else {t.id for t in kp.tasks}
    failed: set[str] = set()
    results: list[LaunchOutcome] = []
    for n, task in enumerate(p.tasks, start=1):
        if task.id in own:
            if kp is not None and task.id == kp.tasks[0].id:
                results += _kernel_block(kp, store, workdir)
            continue
        res = LaunchOutcome(task.id, task.action)
        t0 = time.monotonic()
        if failed & set(task.depends_on):
            res.status = "skipped"
            res.detail["reason"] = f"depends on failed {sorted(failed & set(task.depends_on))}"
        else:
            try:
                if task.kind == "collect" and task.reuse:
                    # a stored launch group of the same version, mode and ranks answers it
                    res.status = "reused"
                    res.run_ids = list(task.reuse["runs"])
                    res.program_version = task.reuse["program_version"]
                    res.detail.update({"mode": task.params["mode"],
                                       "launch_group": task.reuse["launch_group"],
                                       "reused": task.reuse["why"]})
                elif task.kind == "collect":
                    _collect(p, task, store, workdir, res, timeout_s)
                elif task.kind == "synthesize":
                    _synthesize(store, res)
                elif task.kind == "transform":
                    res.detail["transform"] = task.params["transform"]
                else:
                    res.detail["argv"] = task.params["argv"]
            except ArgusError as exc:
                res.status = "failed"
                res.detail["error"] = str(exc)
        if res.status in ("failed", "skipped"):
            failed.add(task.id)
        res.wall_s = time.monotonic() - t0
        if task.kind == "collect" and res.status == "done" and has_gpu():
            res.gpu_s = res.wall_s * int(task.params["world_size"])
        store.insert_row("task", {
            "task_id": task.id, "kind": task.kind, "plan_id": p.plan_id,
            "config": {"action": task.action, "params": task.params, "backend": "torchrun",
                       "program_version": res.program_version, "runs": res.run_ids,
                       "detail": res.detail},
            "status": res.status, "wall_s": res.wall_s, "gpu_s": res.gpu_s,
            "finished_at": datetime.now(UTC).replace(tzinfo=None)})
        results.append(res)
        # one plain line per task on stderr (no bar: launches are few and long)
        extra = f" {res.detail.get('error') or res.detail.get('reason') or ''}"
        print(f"[{n}/{len(p.tasks)}] {task.id} {task.action}: {res.status} "
              f"({res.wall_s:.2f} s){extra.rstrip()}", file=sys.stderr)
    return results


def _kernel_block(kp: Plan, store: Store, workdir: Path) -> list[LaunchOutcome]:
    """Run the rank's kernel plan (:mod:`argusdb.observe.planner.torchrun_kernel`) with the
    command form's runner, in ``workdir/kernel``; its runner writes the tasks' rows."""
    import importlib

    if not has_gpu() and not environment.REPLAY.get():
        out = []
        for t in kp.tasks:
            res = LaunchOutcome(t.id, t.action, "insufficient", detail={"reason": (
                "no NVIDIA GPU on this host: the kernel's single-process signals need CUDA "
                "(Nsight Compute, CUPTI, Proton); nothing stored (ARGUS_REPLAY names recorded "
                "task folders to answer them from)")})
            store.insert_row("task", {
                "task_id": t.id, "kind": t.kind, "plan_id": kp.plan_id,
                "config": {"action": t.action, "params": t.params, "backend": "none",
                           "runs": [], "detail": res.detail},
                "status": res.status, "wall_s": 0.0, "gpu_s": None,
                "finished_at": datetime.now(UTC).replace(tzinfo=None)})
            out.append(res)
        print(f"kernel plan {kp.plan_id}: insufficient ({out[0].detail['reason']})",
              file=sys.stderr)
        return out
    runner = importlib.import_module("argusdb.observe.runner")
    done = runner.execute(kp.to_json(), store, Path(kp.request["source_path"]),
                          workdir / "kernel", False)
    return [LaunchOutcome(r.task_id, r.action, r.status, r.wall_s, r.gpu_s, r.program_version,
                          list(r.run_ids), dict(r.detail)) for r in done]


def observe_torchrun(region: str, signals: list[str], command: list[str], cwd: Path,
                     store: str | Path | Store | None, *, program: str | Path | None = None,
                     options: dict[str, str] | None = None, dry_run: bool = False,
                     workdir: str | Path | None = None, progress: bool | None = None,
                     timeout_s: float | None = None, budget_s: float | None = None,
                     rank: int = 0, replay: bool = True,
                     capture_limit: int | None = None) -> Any:
    """``observe`` for a torchrun command: plan (and unless ``dry_run``) launch, store, answer.

    ``progress`` is taken for ``observe``'s signature: a line per launch is always printed.
    Returns an :class:`argusdb.observe.Observation` whose report has, besides the task table,
    ``distributed``: per signal a per-rank answer with a verdict (:func:`answers.observation`).
    Runs on a CPU too (gloo); what needs CUDA is reported ``insufficient``. ``budget_s`` fits
    the plan to that many estimated wall seconds by recorded costs (:func:`plan.trim`).
    Single-process signals of a kernel region are measured in rank ``rank`` (``replay`` and
    ``capture_limit`` as for the command form); the report's ``kernel`` holds that plan's
    tasks, evidence counts, attribution verdict and replay summary.
    """
    from argusdb.answers.ranks import observation
    from argusdb.observe.observation import (
        Observation,
        _plan_report,
        mark_work_folder,
        observation_store,
    )
    from argusdb.observe.planner.torchrun import plan_torchrun, trim

    raw_timeout = environment.DIST_TIMEOUT_S.get()
    if timeout_s is None and raw_timeout:
        try:
            timeout_s = float(raw_timeout)
        except ValueError as exc:
            raise UsageError(f"ARGUS_DIST_TIMEOUT_S={raw_timeout!r}: "
                             "expected seconds (e.g. 600)") from exc
    with observation_store(store, dry_run) as st:
        kw: dict[str, Any] = {"program": program, "options": options, "rank": rank,
                              "replay": replay, "capture_limit": capture_limit}
        p = plan_torchrun(region, signals, command, cwd, st, **kw)
        if budget_s is not None:
            p = trim(p, budget_s, lambda sigs, timeline: plan_torchrun(
                region, sigs, command, cwd, st, plan_id=p.plan_id, timeline=timeline, **kw))
        if dry_run:
            rep = _plan_report(p)
            rep["distributed"] = p.request["distributed"]
            return Observation(p, None, rep)
        assert st is not None
        st.insert_row("plan", {
            "plan_id": p.plan_id, "source_name": p.request["source"], "region_id": region,
            "signals": p.request["signals"], "scope": {}, "plan": p.to_json(),
            "n_tasks": len(p.tasks), "n_reused": sum(1 for t in p.tasks if t.reuse),
            "created_at": datetime.now(UTC).replace(tzinfo=None)})
        wd = mark_work_folder(Path(workdir) if workdir else Path(f"{st.path}.runs") / p.plan_id)
        results = execute(p, st, wd, timeout_s)
        return Observation(p, _evidence(st, p), _report(st, p, results, observation))


def _reused_runs(p: Plan) -> list[str]:
    """Runs the plan reuses: a launch's (``runs``) and a kernel task's (``run_id``)."""
    return [r for t in p.tasks if t.reuse
            for r in (t.reuse.get("runs") or [t.reuse.get("run_id")]) if r]


def _evidence(st: Store, p: Plan) -> Any:
    """The plan's evidence: what its tasks stored and what the launches it reused hold."""
    return st.arrow("SELECT * FROM evidence WHERE list_contains(?, task_id) OR "
                    "list_contains(?, run_id) ORDER BY evidence_id",
                    [[t.id for t in p.tasks], _reused_runs(p)])


def _report(st: Store, p: Plan, results: list[LaunchOutcome], answer: Any) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = [
        {"id": r.task_id, "action": r.action, "run": p.task(r.task_id).run, "status": r.status,
         "wall_s": r.wall_s, "gpu_s": r.gpu_s, "reuse": p.task(r.task_id).reuse,
         "runs": r.run_ids,
         "params": p.task(r.task_id).params, "detail": r.detail} for r in results]
    counts: dict[str, dict[str, int]] = {}
    for row in st.rows("SELECT signal, evidence_class, count(*) AS n FROM evidence WHERE "
                       "list_contains(?, task_id) OR list_contains(?, run_id) "
                       "GROUP BY ALL ORDER BY ALL", [[t.id for t in p.tasks], _reused_runs(p)]):
        counts.setdefault(row["signal"], {})[row["evidence_class"]] = row["n"]
    failed = [{"task": r.task_id, "action": r.action, "status": r.status,
               "error": r.detail.get("error") or r.detail.get("reason"),
               "evidence_stored": {"runs": r.run_ids, "program_version": r.program_version}}
              for r in results if r.status not in OK_STATUSES]
    dist = answer(st, p.request, tasks)
    for t in tasks:
        t.pop("params")
    out = {"plan_id": p.plan_id, "ok": not failed and dist["answered"], "failed": failed,
           "tasks": tasks, "evidence": counts, "notes": p.notes,
           "wall_s": sum(t["wall_s"] for t in tasks),
           "gpu_s": sum(t["gpu_s"] or 0 for t in tasks), "distributed": dist}
    from argusdb.observe.planner.torchrun_kernel import kernel_plan

    kp = kernel_plan(p)
    if kp is not None:
        from argusdb.answers.rank_kernel import kernel_answer
        from argusdb.observe import evidence_of, report

        krep = report(kp, st)
        own = {t.id for t in kp.tasks}
        ev = evidence_of(kp, st)
        runs = {r["run_id"]: r for r in st.rows(
            "SELECT run_id, program_version, signature, launch_replay FROM run "
            "WHERE list_contains(?, run_id)", [sorted(set(ev.column("run_id").to_pylist()))])}
        outcomes = {r.task_id: r for r in results if r.task_id in own}
        out["kernel"] = {**kernel_answer(kp.request, ev, outcomes, runs),
                         "attribution": krep["attribution"], "replay": krep.get("replay"),
                         "not_applicable": krep["not_applicable"]}
        out["ok"] = out["ok"] and out["kernel"]["answered"]
    return out
