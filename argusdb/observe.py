"""``observe(region, signals, scope)``: the front door. Plan, run on the GPU, store, answer.

The planner (:mod:`argusdb.planner`) turns the request into a DAG of tasks; the runner
(``argusdb.runner.execute``, on a GPU host) runs them in topological order, ingests each
artefact with its program version and records each task's cost; ``observe`` then returns the
evidence of the plan's runs (Arrow) and a report. ``dry_run=True`` only plans: no GPU needed.

Example:
    >>> obs = observe("softmax/softmax_fwd", ["duration"], store="argus.duckdb",
    ...               source="kernels/softmax.py", dry_run=True)
    >>> [t.action for t in obs.plan.tasks]
    ['find_launch', 'cupti_timing']
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argusdb.errors import ArgusError, UsageError

if TYPE_CHECKING:
    import pyarrow as pa

    from argusdb.planner.plan import Plan
    from argusdb.store import Store


class NoGpuError(UsageError):
    """observe was asked to run a plan on a machine without an NVIDIA GPU."""

    code = "E201"


class RunnerMissingError(ArgusError):
    """This build of argusdb has no GPU runner (``argusdb.runner``) to execute plans."""

    code = "E202"


@dataclass
class Observation:
    """What ``observe`` returns: the plan, and once run, the evidence and a report."""

    plan: Plan
    evidence: pa.Table | None = None
    report: dict[str, Any] = field(default_factory=dict)


def has_gpu() -> bool:
    """True when this machine shows an NVIDIA GPU (driver tool or device node)."""
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()


def observe(region: str, signals: str | list[str], scope: dict[str, str] | None = None, *,
            store: str | Path | Store | None = None, source: str | Path,
            dry_run: bool = False, options: dict[str, str] | None = None,
            workdir: str | Path | None = None, progress: bool | None = None) -> Observation:
    """Observe ``signals`` of ``region`` at ``scope``: plan, run, store and return evidence.

    Args:
        region: region id ``<program>/<kernel>[/<name>]`` of ``source``.
        signals: names, as a list or comma-separated (see :mod:`argusdb.planner.signals`).
        scope: coordinate → value, e.g. ``{"warp": "each"}``; ``all`` where not given.
        store: store path (created when running) or an open Store; evidence already there is
            reused. A dry run without a store plans everything.
        source: the Triton kernel source file.
        dry_run: only plan (needs no GPU).
        options: compile options and ``target`` that pin the program version (see ingest).
        workdir: where the runner writes artefacts (default: ``<store>.runs/<plan_id>``).
        progress: progress bar (default: on a terminal).

    Raises:
        PlanError: the request cannot be planned.
        NoGpuError: not a dry run, and there is no GPU here.
        RunnerMissingError: not a dry run, and this build has no runner.
    """
    from argusdb.planner import plan as make_plan
    from argusdb.store import Store

    names = [s.strip() for s in signals.split(",")] if isinstance(signals, str) else signals
    if not dry_run:
        _check_can_run()
    own = isinstance(store, str | Path)
    st: Store | None
    if isinstance(store, str | Path):
        exists = str(store).startswith("ducklake:") or Path(store).exists()
        st = Store.open(store, create=not dry_run) if exists or not dry_run else None
    else:
        st = store
    try:
        p = make_plan(source, region, names, scope, st, options=options)
        if dry_run:
            return Observation(p, None, _plan_report(p))
        assert st is not None
        return _run(p, st, Path(source), workdir, progress)
    finally:
        if own and st is not None:
            st.close()


def _check_can_run() -> None:
    import os

    # ARGUS_REPLAY names recorded bundles the runner answers collections from: no GPU needed.
    if not has_gpu() and not os.environ.get("ARGUS_REPLAY"):
        raise NoGpuError("no NVIDIA GPU on this machine: observe runs its plan on a GPU. Use "
                         "--dry-run (dry_run=True) to see the plan here, or run on a GPU host "
                         "(or set ARGUS_REPLAY to recorded bundles to replay them).")
    import importlib

    try:
        importlib.import_module("argusdb.runner")
    except ImportError as exc:
        if exc.name == "argusdb.runner":
            raise RunnerMissingError(
                "this build of argusdb has no GPU runner (argusdb.runner): a GPU runner is "
                "needed to execute plans. Install argusdb with the runner (argusdb[gpu]) or use "
                "--dry-run.") from exc
        raise RunnerMissingError(
            f"the GPU runner (argusdb.runner) cannot be imported: {exc}. Install the GPU "
            f"dependencies (pip install 'argusdb[gpu]') or use --dry-run.") from exc


def _plan_report(p: Plan) -> dict[str, Any]:
    collect = [t for t in p.tasks if t.kind == "collect"]
    return {"plan_id": p.plan_id, "tasks": len(p.tasks), "runs": len(collect),
            "reused": [t.id for t in collect if t.reuse], "notes": p.notes,
            "estimate": estimate(p)}


def estimate(p: Plan) -> dict[str, Any]:
    """Expected cost of running ``p``: medians of past tasks of each action, reused tasks free.

    ``unknown`` lists the tasks that have no past task of their action in the store.
    """
    todo = [t for t in p.tasks if not t.reuse]
    known = [t.estimate for t in todo if t.estimate]
    return {"wall_s": sum(e["wall_s"] or 0.0 for e in known),
            "gpu_s": sum(e["gpu_s"] or 0.0 for e in known), "estimated": len(known),
            "unknown": [t.id for t in todo if not t.estimate]}


def _run(p: Plan, st: Store, source: Path, workdir: str | Path | None,
         progress: bool | None) -> Observation:
    import importlib

    runner = importlib.import_module("argusdb.runner")  # checked by _check_can_run

    collect = [t for t in p.tasks if t.kind == "collect"]
    st.insert_row("plan", {
        "plan_id": p.plan_id, "source_name": source.name, "region_id": p.request["region"],
        "signals": p.request["signals"], "scope": p.request["scope"], "plan": p.to_json(),
        "n_tasks": len(p.tasks), "n_reused": sum(1 for t in collect if t.reuse),
        "created_at": datetime.now(UTC).replace(tzinfo=None)})
    wd = Path(workdir) if workdir else Path(f"{st.path}.runs") / p.plan_id
    wd.mkdir(parents=True, exist_ok=True)
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
    runs = [t.reuse["run_id"] for t in p.tasks if t.reuse and t.reuse.get("run_id")]
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


def report(p: Plan, st: Store) -> dict[str, Any]:
    """Status and cost of each task (from the task table) and evidence counts per class."""
    rows = {r["task_id"]: r for r in st.rows(
        "SELECT task_id, status, wall_s, gpu_s FROM task WHERE plan_id = ?", [p.plan_id])}
    ev = evidence_of(p, st)
    counts: dict[str, dict[str, int]] = {}
    for sig, cls in zip(ev.column("signal").to_pylist(), ev.column("evidence_class").to_pylist(),
                        strict=True):
        counts.setdefault(sig, {}).setdefault(cls, 0)
        counts[sig][cls] += 1
    tasks = [{"id": t.id, "action": t.action, "run": t.run,
              "status": rows.get(t.id, {}).get("status", "reused" if t.reuse else "missing"),
              "wall_s": rows.get(t.id, {}).get("wall_s"), "gpu_s": rows.get(t.id, {}).get("gpu_s"),
              "reuse": t.reuse} for t in p.tasks]
    return {"plan_id": p.plan_id, "tasks": tasks, "evidence": counts,
            "wall_s": sum(t["wall_s"] or 0 for t in tasks),
            "gpu_s": sum(t["gpu_s"] or 0 for t in tasks)}


def plan_json(p: Plan) -> str:
    """The ``--dry-run --json`` document: ``{"tasks": [...]}``."""
    return json.dumps({"tasks": [t.to_json() for t in p.tasks]})
