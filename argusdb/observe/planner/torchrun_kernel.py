"""The kernel part of a torchrun plan: single-process signals measured in one rank.

``argus observe --region M/K[/R] --signals inst_executed,... --rank R -- torchrun ...`` asks for
signals of one Triton kernel that a torchrun program launches (instruction counts and stalls
from Nsight Compute's source page, PC sampling, forced-wait exposed latency, a region's own
time). They are planned as the command form plans them (:func:`argusdb.observe.planner.plan`),
with the user's torchrun command as the command: every rank runs, and the launcher's hooks
(:mod:`argusdb.observe.launch.hooks`) install in rank ``R`` only (the spec's ``rank``), so the
other ranks run the program as they always do. Rank ``R``'s run finds the launch, times the
program's launches in context and captures the measured launch; the collections that need only
the kernel (``ncu``, Proton, the forced-wait variant's timing) run on replays of that capture in
the replay worker, outside torchrun (:mod:`argusdb.observe.runner.replay`). Each run is stored
with rank ``R`` (``run.rank``, so ``evidence.rank``) in a launch group of its own, beside the
per-rank timeline launches of the same plan.

Example:
    >>> kernel_signals(["duration", "inst_executed", "exposed_communication"], "m/k/load")
    ['duration', 'inst_executed']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argusdb.observe.planner.plan import Plan, PlanError, Task

#: Signals a torchrun plan answers from its own launches (argusdb.observe.planner.torchrun).
TIMELINE_SIGNALS = ("duration", "step_time", "overlap", "exposed_communication",
                    "collective_duration", "collective_bytes", "host_ops")


def kernel_signals(names: list[str], region_id: str) -> list[str]:
    """The signals of ``names`` the rank's kernel plan answers: every single-process signal
    (:func:`argusdb.schema.signals.parse_signal`), and ``duration`` of a region inside a kernel
    (``M/K/R``: its own time, which the per-rank kernel records cannot give).

    Raises:
        PlanError: a name is neither a torchrun signal nor a single-process one.
    """
    from argusdb.schema.signals import parse_signal

    out = []
    for s in names:
        if s == "duration":
            if len(region_id.split("/")) == 3:
                out.append(s)
            continue
        if s in TIMELINE_SIGNALS:
            continue
        parse_signal(s)  # refuses an unknown name, with the vocabulary
        out.append(s)
    return out


def plan_rank_kernel(pid: str, region_id: str, signals: list[str], command: list[str],
                     cwd: Path, source: Path, rank: int, world: int, store: Any,
                     options: dict[str, str] | None, replay: bool,
                     capture_limit: int | None) -> Plan:
    """The command-form plan of ``signals`` of ``region_id`` in rank ``rank`` of the torchrun
    ``command`` (the user's own, not rewritten), with plan id ``<pid>.k``: its tasks carry
    ``rank`` (the launcher installs in that rank only) and its request ``launch`` (the runs'
    rank, world size and launch group ``<pid>.kernel``).

    Raises:
        PlanError: ``rank`` is not a rank of the launch, or the command form refuses the request.
    """
    from argusdb.observe.launch.capture import limit_bytes
    from argusdb.observe.planner import plan as make_plan

    if not 0 <= rank < world:
        raise PlanError(f"--rank {rank}: the launch has ranks 0..{world - 1} "
                        f"(--nproc-per-node {world}); pick one of them")
    kw: dict[str, Any] = {"options": options, "command": list(command),
                          "cwd": str(cwd.resolve()), "replay": replay,
                          "capture_limit": capture_limit if capture_limit is not None
                          else limit_bytes(None)}
    kp = make_plan(source, region_id, signals, None, store, plan_id=f"{pid}.k", **kw)
    kp.request["launch"] = {"rank": rank, "world_size": world,
                            "launch_group": f"{pid}.kernel"}
    kp.request["rank"] = rank
    kp.request["source_path"] = str(Path(source).resolve())
    for t in kp.tasks:
        t.params["rank"] = rank
        if t.runs_program:
            t.why += (f"; the command is the torchrun launch of all {world} rank(s), with the "
                      f"launcher's hooks in rank {rank} only (the others run unchanged)")
    return kp


def merge(p: Plan, kp: Plan) -> None:
    """Put the kernel plan's tasks into the torchrun plan ``p`` (after its own), number their
    runs on from ``p``'s, and keep the kernel plan's request under ``request.kernel``."""
    n = sum(1 for t in p.tasks if t.kind == "collect")
    tasks: list[Task] = kp.ordered()
    for t in tasks:
        if t.kind == "collect":
            n += 1
            t.run = f"r{n}"
    p.tasks.extend(tasks)
    p.request["kernel"] = {"plan_id": kp.plan_id, "request": kp.request,
                           "tasks": [t.id for t in tasks], "notes": list(kp.notes)}
    rank = kp.request["rank"]
    p.notes.extend(f"rank {rank}: {n_}" for n_ in kp.notes)


def kernel_plan(p: Plan) -> Plan | None:
    """The kernel plan :func:`merge` put into ``p``, as a plan of its own (None if none)."""
    k = p.request.get("kernel")
    if not k:
        return None
    ids = set(k["tasks"])
    return Plan(k["plan_id"], k["request"], [t for t in p.tasks if t.id in ids],
                list(k["notes"]))
