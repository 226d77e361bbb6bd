"""The runner: execute a plan's tasks, ingest what they collect, record what each one cost.

``execute`` walks the plan in topological order (graphlib). Per kind:

- **control** ``find_launch``: reads the source's launch harness (kernel, default
  configuration), registers the parent program version, and has the backend launch it once
  (live: a correctness check against torch);
- **transform** (``forced_wait``, ``proton_scopes``, ``pipelining_off``): makes the variant with
  :mod:`argusdb.observe.transforms` and registers it as a program version bound to its parent
  (``parent_version``, ``transform``, ``transform_task_id`` = the task);
- **collect**: the backend runs the collection on the task's version; each artefact is ingested
  as a run of that task (``run.task_id`` = the plan's task id); a variant's first collection
  records its result check against the parent (``variant_check``); derivation uses only checked
  variants, and a variant that computes another result fails its task (its dependents are
  skipped);
- **synthesize** (``attribute``, ``derive_exposed_latency``): refreshes the materialized
  attribution and derivation and reports what they hold for the region.

A plan of a user's command (``request.command``) runs through :mod:`argusdb.observe.runner.command`:
its control task finds the kernel's binary, which becomes the parent program version, and every
collection runs the command again under the launcher's hooks (see ``_CommandRun``).

Tasks with ``reuse`` are not run (status ``reused``); a task whose dependency failed is
``skipped``. A collection whose backend leaves CPU work for later (``Collected.later``: the
export of an Nsight Compute report) is ``pending`` while the next tasks run, and is settled
(its artefacts ingested, its row written) before a task that depends on it, or at the end.
Every task gets a row in ``task`` with its plan, status, ``wall_s`` (this process)
and ``gpu_s`` (device seconds the backend held, recorded ones on replay). Progress: a tqdm bar on
a terminal, plain lines otherwise.

Example:
    >>> from argusdb.observe.runner.backends import ReplayBackend
    >>> results = execute(plan.to_json(), store,  # doctest: +SKIP
    ...                   Path("argusdb/demo/kernels/softmax.py"), Path("work"), progress=False,
    ...                   backend=ReplayBackend(Path("tests/data/gpu")))
    >>> [(r.action, r.status) for r in results][:2]  # doctest: +SKIP
    [('find_launch', 'done'), ('cupti_timing', 'done')]
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any

from argusdb import environment
from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.errors import ArgusError, InputError, VariantMismatch
from argusdb.ingest import ingest_path, program_version_id
from argusdb.ingest.variants import VariantOf, record_check
from argusdb.observe.runner.backends import Backend, Collected, Job, LiveBackend, default_backend
from argusdb.observe.runner.harness import Harness
from argusdb.observe.transforms import apply as apply_transform
from argusdb.store import materialize
from argusdb.store.embedded import Store

__all__ = ["TaskResult", "VariantMismatch", "command_backend", "execute"]


def command_backend(request: dict[str, Any], tasks: list[dict[str, Any]] | None = None
                    ) -> Backend:
    """Replay of recorded task folders from ``ARGUS_REPLAY``, else the command on this GPU."""
    from argusdb.observe.runner.command import CommandBackend, CommandReplayBackend

    replay = environment.REPLAY.get()
    if replay:
        return CommandReplayBackend(Path(replay))
    backend = CommandBackend(list(request["command"]), Path(request.get("cwd") or "."))
    if request.get("replay"):
        from argusdb.observe.runner.replayed import ReplayedCommandBackend

        return ReplayedCommandBackend(backend, tasks)
    return backend

#: Largest relative error of a variant against its parent that still counts as "the same result".
TOLERANCE = 1e-5


@dataclass
class TaskResult:
    """What one task did."""

    task_id: str
    kind: str
    action: str
    status: str
    wall_s: float
    gpu_s: float | None = None
    program_version: str | None = None
    run_ids: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Version:
    source: ProgramSource
    options: dict[str, str]
    target: str | None
    overrides: dict[str, Any] = field(default_factory=dict)
    parent: _Version | None = None
    transform: str | None = None
    task_id: str | None = None

    @property
    def id(self) -> str:
        return program_version_id(self.source, self.options, self.target)


class _Run:
    def __init__(self, plan: dict[str, Any], store: Store, source_path: Path, workdir: Path,
                 backend: Backend) -> None:
        self.plan, self.store, self.workdir, self.backend = plan, store, workdir, backend
        self.src = ProgramSource.from_path(source_path)
        self.harness = Harness.read(self.src)
        opts = {str(k): str(v) for k, v in (plan["request"].get("options") or {}).items()}
        # The target is the plan's option, else the device's; the command form reads the
        # binary's from the launcher's find_launch and sets it there.
        target = opts.pop("target", None) or _device_target(backend)
        if target is None and "command" not in plan["request"]:
            raise InputError(self.src.name, "no GPU target: the plan names none and the "
                             f"{backend.name} backend shows no device",
                             "give --option target=sm_XX (e.g. sm_90), or run on the GPU")
        self.config = opts.pop("config", self.harness.default_config)
        if self.config not in self.harness.configs:
            raise InputError(self.src.name, f"no configuration {self.config!r}",
                             f"use one of {', '.join(self.harness.configs)}")
        self.parent = _Version(self.src, {"config": self.config, **opts}, target)
        self.versions: dict[str, _Version] = {"parent": self.parent}
        self.checked: set[str] = set()
        # launch counts the control task decided (warm-up), passed on to every collection
        self.launch: dict[str, Any] = {}
        self.pending: dict[str, Any] = {}

    # -- program versions ----------------------------------------------------------------
    def register(self, v: _Version) -> None:
        """Insert the version and its region spans (ingest finds them there)."""
        with self.store.transaction():
            self.store.insert_row("program_version", {
                "program_version": v.id, "program": v.source.stem,
                "source_name": v.source.name, "source_sha256": v.source.sha256,
                "source_text": v.source.text, "options": v.options, "target": v.target,
                "parent_version": v.parent.id if v.parent else None,
                "transform_task_id": v.task_id, "transform": v.transform})
            for r in parse_regions(v.source):
                self.store.insert_row("region_span", {
                    "program_version": v.id, "region_id": r.region_id, "kernel": r.kernel,
                    "name": r.name, "start_line": r.start_line, "end_line": r.end_line})

    def job(self, task: dict[str, Any], v: _Version) -> Job:
        return Job(task["action"], v.source, v.parent.source if v.parent else None, v.transform,
                   self.config, v.overrides, {**self.launch, **task["params"]},
                   self.workdir / task["id"].removeprefix(self.plan["plan_id"] + ".")
                   .replace("/", "_"))

    def stale_reuse(self, task: dict[str, Any]) -> str | None:
        """Why a planned reuse does not hold for the version this run measures, or None.

        A command's version is known only once the control task has found the binary: a run
        planned for reuse is used only when it measured that very version.
        """
        return None

    # -- tasks -----------------------------------------------------------------------------
    def control(self, task: dict[str, Any], res: TaskResult) -> None:
        if "launches_warmup" in task["params"]:
            self.launch["launches_warmup"] = task["params"]["launches_warmup"]
        self.register(self.parent)
        got = self.backend.run(self.job(task, self.parent))
        res.program_version, res.gpu_s = self.parent.id, got.gpu_s
        res.detail.update({"kernel": self.harness.kernel, "config": self.config, **got.detail})

    def variant_options(self) -> dict[str, str]:
        """The options a transformed variant's version starts from: its parent's."""
        return dict(self.parent.options)

    def transform(self, task: dict[str, Any], res: TaskResult) -> None:
        var = apply_transform(task["action"], self.src, task["params"])
        v = _Version(var.source, {**self.variant_options(),
                                  **{k: str(x) for k, x in var.options.items()}},
                     self.parent.target, dict(var.options), self.parent, var.transform,
                     task["id"])
        self.register(v)
        self.versions[task["id"]] = v
        res.program_version = v.id
        res.detail.update({"transform": var.transform, "parent_version": self.parent.id})

    def collect(self, task: dict[str, Any], res: TaskResult) -> None:
        v = self.versions.get(task["params"].get("version", "parent"))
        if v is None:
            raise InputError(task["id"], f"version {task['params'].get('version')!r} was not "
                             "made by an earlier transform task", "check the plan")
        got = self.backend.run(self.job(task, v))
        later = got.later
        if later is not None:
            # its CPU tail (an export) runs beside the next tasks: ingested when settled
            res.status = "pending"
            self.pending[task["id"]] = lambda: self.ingest(task, v, later(), res)
            return
        self.ingest(task, v, got, res)

    def ingest(self, task: dict[str, Any], v: _Version, got: Collected, res: TaskResult
               ) -> None:
        """Store what a collection collected as runs of ``task`` (and a variant's check)."""
        v = self._ran(v, got)
        for path in got.paths:
            opts = {**v.options, **({"target": v.target} if v.target else {})}
            ing = ingest_path(self.store, path, v.source, opts,
                              VariantOf(v.parent.id, v.transform or "", v.task_id)
                              if v.parent else None, task_id=task["id"],
                              launch=self.plan["request"].get("launch"))
            res.run_ids.append(ing.run_id)
            res.detail.setdefault("artefacts", []).append(
                {"file": path.name, "kind": ing.kind, "rows": ing.rows,
                 "already_ingested": ing.already})
        if v.parent is not None and v.id not in self.checked:
            if got.rel_err_vs_parent is None:
                res.detail["variant_check"] = "no result check came back: not used by derivation"
            else:
                passed = record_check(self.store, v.id, v.parent.id, got.rel_err_vs_parent,
                                      TOLERANCE, task_id=task["id"])
                res.detail["variant_check"] = {"rel_err_vs_parent": got.rel_err_vs_parent,
                                               "passed": passed}
                self.checked.add(v.id)
                if not passed:
                    res.program_version, res.gpu_s = v.id, got.gpu_s
                    raise VariantMismatch(
                        f"variant {v.id} ({v.transform}) differs from its parent {v.parent.id}: "
                        f"relative error {got.rel_err_vs_parent:.3g} > {TOLERANCE:g}; its runs "
                        "are stored but derivation will not use them. Check the transform.")
        res.program_version, res.gpu_s = v.id, got.gpu_s
        res.detail.update(got.detail)

    def _ran(self, v: _Version, got: Collected) -> _Version:
        if got.ran_source is None:
            return v
        ran = _Version(got.ran_source, v.options, v.target, v.overrides, v.parent,
                       got.ran_transform or v.transform, v.task_id)
        self.register(ran)
        return ran

    def synthesize(self, task: dict[str, Any], res: TaskResult) -> None:
        with self.store.transaction():
            rep = materialize.refresh(self.store)
        region = task["params"].get("region_id") or self.plan["request"].get("region")
        cls = "derived" if task["action"] == "derive_exposed_latency" else "attributed"
        rows = self.store.rows(
            "SELECT count(*) AS n FROM evidence WHERE evidence_class = ? AND region_id = ?",
            [cls, region])
        res.detail.update({"refreshed_versions": rep.rebuilt_versions,
                           "derivation_rebuilt": rep.derivation_rebuilt,
                           f"{cls}_rows_for_region": rows[0]["n"]})

    def task(self, task: dict[str, Any], failed: set[str]) -> TaskResult:
        """Run one task (or mark it reused/skipped) and write its row in ``task``."""
        res = TaskResult(task["id"], task["kind"], task["action"], "done", 0.0)
        t0 = time.monotonic()
        stale = self.stale_reuse(task)
        if stale:
            res.detail["reuse_refused"] = stale
            task = {**task, "reuse": None}
        if task.get("reuse"):
            res.status = "reused"
            res.detail["reuse"] = task["reuse"]
        elif failed & set(task["depends_on"]):
            res.status = "skipped"
            res.detail["reason"] = f"depends on failed {sorted(failed & set(task['depends_on']))}"
        else:
            handler = {"control": self.control, "transform": self.transform,
                       "collect": self.collect, "synthesize": self.synthesize}[task["kind"]]
            try:
                handler(task, res)
            except ArgusError as exc:
                res.status = "failed"
                res.detail["error"] = str(exc)
        if res.status == "pending":
            finish = self.pending.pop(task["id"])
            self.pending[task["id"]] = (finish, task, res, time.monotonic() - t0)
            return res
        self.finished(task, res, time.monotonic() - t0, failed)
        return res

    def settle(self, ids: set[str] | None, failed: set[str]) -> list[TaskResult]:
        """Finish the pending tasks among ``ids`` (all when None): wait for their CPU tail,
        ingest what they collected, write their rows. Returns them, settled."""
        out = []
        for tid in [t for t in self.pending if ids is None or t in ids]:
            finish, task, res, held = self.pending.pop(tid)
            res.status = "done"
            res.detail["finished_beside_later_tasks"] = True
            t0 = time.monotonic()
            try:
                finish()
            except ArgusError as exc:
                res.status = "failed"
                res.detail["error"] = str(exc)
            # its wall: the time it held the runner (its run, then the wait and the ingest
            # when settled), not the span the next tasks ran in
            self.finished(task, res, held + time.monotonic() - t0, failed)
            out.append(res)
        return out

    def finished(self, task: dict[str, Any], res: TaskResult, wall_s: float,
                 failed: set[str]) -> None:
        """Count a failed or skipped task as failed, and write the task's row."""
        if res.status in ("failed", "skipped"):
            failed.add(task["id"])
        res.wall_s = wall_s
        self.store.insert_row("task", {
            "task_id": task["id"], "kind": task["kind"], "plan_id": self.plan["plan_id"],
            "config": {"action": task["action"], "params": task["params"],
                       "backend": self.backend.name, "program_version": res.program_version,
                       "runs": res.run_ids, "detail": res.detail},
            "status": res.status, "wall_s": res.wall_s, "gpu_s": res.gpu_s,
            "finished_at": datetime.now(UTC).replace(tzinfo=None)})


class _CommandRun(_Run):
    """A plan of a user's command: the parent version is the binary the control task found.

    The control task runs the command once with the launcher's hooks; the kernel's module file
    must be the planned source (same text), and the program version is that source with the
    binary's identity as options (``binary`` hash, num_warps, num_stages, constexprs) and its
    target. The binary's TTGIR and SASS are ingested under it, so attribution has call sites.
    Every collection then measures that binary (the backend checks each run's launch record).
    """

    def __init__(self, plan: dict[str, Any], store: Store, source_path: Path, workdir: Path,
                 backend: Backend) -> None:
        self.plan, self.store, self.workdir, self.backend = plan, store, workdir, backend
        self.src = ProgramSource.from_path(source_path)
        self.config = "command"
        self.parent = _Version(self.src, {}, "unknown")
        self.versions = {"parent": self.parent}
        self.checked = set()
        self.launch = {}
        self.pending = {}

    def control(self, task: dict[str, Any], res: TaskResult) -> None:
        self.launch.update({"launches_warmup": task["params"].get("launches_warmup", 0),
                            "kernel": task["params"]["kernel"],
                            "program": task["params"]["program"]})
        got = self.backend.run(self.job(task, self.parent))
        d = got.detail
        sha = d.get("module_sha256") or _sha_of(d.get("module_file"))
        if sha is not None and sha != self.src.sha256:
            kernel = task["params"]["kernel"]
            raise InputError(str(d.get("module_file")), f"defines the launched {kernel}, but "
                             f"its text differs from the planned {self.src.name}",
                             "pass --program the file the command imports")
        b = d["binary"]
        opts = {"kernel": str(task["params"]["kernel"]), "binary": str(b["hash"]),
                "num_warps": str(b.get("num_warps")), "num_stages": str(b.get("num_stages"))}
        opts.update({f"constexpr.{k}": str(v) for k, v in (b.get("constexprs") or {}).items()})
        self.parent.options, self.parent.target = opts, str(b.get("target") or "unknown")
        self.register(self.parent)
        self.launch.update({"binary": b["hash"], "pin": d.get("pin"),
                            "measure_index": d.get("measure_index", 0),
                            "ncu_launch_skip": d.get("ncu_launch_skip", 0)})
        if "capture" in d or "in_context_timing" in d:
            # what the replayed collections and the control-run timing read
            self.launch["control"] = {
                "folder": str(self.job(task, self.parent).workdir.resolve()),
                "capture": d.get("capture"), "in_context_timing": d.get("in_context_timing"),
                "num_warps": b.get("num_warps")}
        for path in got.paths:
            ing = ingest_path(self.store, path, self.src,
                              {**self.parent.options, "target": self.parent.target},
                              task_id=task["id"], launch=self.plan["request"].get("launch"))
            res.run_ids.append(ing.run_id)
            res.detail.setdefault("artefacts", []).append(
                {"file": path.name, "kind": ing.kind, "rows": ing.rows})
        res.program_version, res.gpu_s = self.parent.id, got.gpu_s
        res.detail.update(d)

    def variant_options(self) -> dict[str, str]:
        """A variant of the found binary: its version names the parent's binary (the variant's
        own binary is compiled at run time and recorded by its collection)."""
        opts = {k: v for k, v in self.parent.options.items() if k != "binary"}
        opts["parent_binary"] = self.parent.options.get("binary", "")
        return opts

    def stale_reuse(self, task: dict[str, Any]) -> str | None:
        reuse = task.get("reuse") or {}
        if task["kind"] != "collect" or not reuse.get("program_version"):
            return None
        version = self.versions.get(task["params"].get("version", "parent"))
        if version is not None and version.id == reuse["program_version"]:
            return None
        return (f"run {reuse.get('run_id')} measured version {reuse['program_version']}, not "
                f"{version.id if version else 'the variant'} that this run of the command "
                f"launched (another binary): collected again")


def _device_target(backend: Backend) -> str | None:
    """The target of the device the backend runs on: its own answer (a replay bundle's
    recorded device), else this machine's GPU."""
    own = getattr(backend, "device_target", None)
    if callable(own):
        got = own()
        return str(got) if got else None
    from argusdb.observe.planner.target import device_target

    return device_target()


def _sha_of(path: str | None) -> str | None:
    if not path or not Path(path).exists():
        return None
    return ProgramSource.from_path(path).sha256


def _ordered(tasks: list[dict[str, Any]]) -> list[str]:
    """Topological order; among ready tasks, plan order (so runs happen as planned), except
    that what reads the control run goes first (the in-context duration: first evidence), then
    Nsight Compute over the replay worker: the export of its report is CPU work that then runs
    beside the replayed timings instead of after them."""
    def rank(t: dict[str, Any]) -> int:
        params = t.get("params", {})
        return (0 if params.get("from_control") else
                1 if t["action"] == "ncu_source" and params.get("replay") else 2)

    index = {t["id"]: (rank(t), i) for i, t in enumerate(tasks)}
    ts = TopologicalSorter({t["id"]: set(t["depends_on"]) for t in tasks})
    ts.prepare()
    out: list[str] = []
    while ts.is_active():
        ready = sorted(ts.get_ready(), key=index.__getitem__)
        out.extend(ready)
        ts.done(*ready)
    return out


def _progress(tasks: list[dict[str, Any]], on: bool) -> Any:
    if on:
        from tqdm import tqdm

        return tqdm(tasks, desc="observe", unit="task", file=sys.stderr)
    return tasks


def execute(plan: dict[str, Any], store: Store, source_path: Path, workdir: Path,
            progress: bool, backend: Backend | None = None) -> list[TaskResult]:
    """Run ``plan`` (its JSON form) against ``store``; see the module docstring.

    Args:
        plan: ``{"plan_id", "request", "tasks": [...]}`` as the planner writes it.
        store: an open store; every task gets a row in ``task`` (plan_id set).
        source_path: the kernel source the plan was made for.
        workdir: where artefacts are written (a folder per task).
        progress: a tqdm bar (True) or one plain line per task on stderr (False).
        backend: where collections run; default: replay from ``ARGUS_REPLAY``, else live.

    Returns:
        One result per task, in execution order.

    Raises:
        InputError: the source has no launch harness, or no backend is available.
    """
    command = plan["request"].get("command")
    if command:
        backend = backend or command_backend(plan["request"], plan["tasks"])
        run: _Run = _CommandRun(plan, store, Path(source_path), Path(workdir), backend)
    else:
        backend = backend or default_backend()
        if isinstance(backend, LiveBackend):
            backend.source_dir = Path(source_path).resolve().parent
        run = _Run(plan, store, Path(source_path), Path(workdir), backend)
    tasks = {t["id"]: t for t in plan["tasks"]}
    ordered = [tasks[i] for i in _ordered(plan["tasks"])]
    failed: set[str] = set()
    results: list[TaskResult] = []
    number: dict[str, int] = {}

    def say(done: list[TaskResult]) -> None:
        for res in done:
            if progress or res.status == "pending":
                continue
            gpu = "" if res.gpu_s is None else f", GPU {res.gpu_s:.2f} s"
            error = f" {res.detail.get('error', '')}" if res.status == "failed" else ""
            print(f"[{number[res.task_id]}/{len(ordered)}] {res.task_id} {res.action}: "
                  f"{res.status} ({res.wall_s:.2f} s{gpu}){error}", file=sys.stderr)

    try:
        for n, task in enumerate(_progress(ordered, progress), start=1):
            say(run.settle(set(task["depends_on"]), failed))
            number[task["id"]] = n
            res = run.task(task, failed)
            results.append(res)
            say([res])
        say(run.settle(None, failed))
    finally:
        close = getattr(backend, "close", None)
        if close is not None:  # the live backend's resident worker
            close()
    return results
