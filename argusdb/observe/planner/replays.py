"""Which tasks of a command plan run the user's program, and which run on the captured launch.

With replay (the default of the command form), the program runs once: the control task finds
the launch and its binary, records CUPTI activity of the whole run (the in-context duration of
the program's launches, ``cupti_timing.parent`` reads it) and copies the measured launch's
arguments (:mod:`argusdb.observe.launch.capture`). Every other collection needs the kernel,
not the program, and runs in the replay worker (:mod:`argusdb.observe.runner.replay`) on
replays of that launch: forced-wait and Proton variants, PC sampling, and Nsight Compute over
the worker. Each task says so in ``runs_program`` and in its reason. Where replay cannot
stand in (found at run time: see :data:`FALLBACK`), those collections run the program again,
as with ``--no-replay``, and the report says why.

Example:
    >>> FALLBACK.split(";")[0]
    'the capture is over --capture-limit (default 4 GiB)'
"""

from __future__ import annotations

from argusdb.observe.launch.capture import DEFAULT_LIMIT_BYTES
from argusdb.observe.planner.recipes.context import LAUNCHES_WARMUP, PlanContext

#: When a replay cannot stand in for the program (decided after the control run).
FALLBACK = ("the capture is over --capture-limit (default 4 GiB); an argument is a pointer "
            "table, a host-built TMA descriptor or another object that is not a tensor or a "
            "plain value; the measured binary was launched only inside CUDA graph capture; or "
            "the replay does not compile to the measured binary")

#: What a replayed collection is, per action.
_HOW = {
    "cupti_timing": "CUPTI activity of replays of the captured launch in the replay worker "
                    "(inputs restored and L2 flushed before each; a standing of its own, "
                    "launch_replay, never pooled with the program's in-context timing)",
    "ncu_source": "Nsight Compute over the replay worker's one launch, not over the program",
    "proton_instr": "the instrumented variant launched once on the restored inputs in a "
                    "replay worker of its own, checked against the parent's outputs",
    "proton_pcsampling": "Proton PC sampling of replays of the captured launch in a replay "
                         "worker of its own",
}


def mark(ctx: PlanContext, capture_limit: int | None) -> None:
    """Set ``runs_program`` and the replay parameters of a command plan's tasks."""
    limit = capture_limit if capture_limit is not None else DEFAULT_LIMIT_BYTES
    control = ctx.root()
    control.runs_program = True
    collects = [t for t in ctx.tasks if t.kind == "collect"]
    if not ctx.replay:
        for t in collects:
            t.runs_program = True
        ctx.notes.append(f"per run: each of the {len(collects)} collections runs the program "
                         f"again (--no-replay)")
        return
    control.params["capture"] = {"limit_bytes": limit, "warmup": LAUNCHES_WARMUP}
    control.params["time"] = True
    control.why += (f"; it also records CUPTI activity of the whole run (the in-context "
                    f"duration) and copies the measured launch's arguments (at most "
                    f"{limit / (1 << 30):.3g} GiB, --capture-limit) for the replay worker")
    replayed = 0
    for t in collects:
        t.runs_program = False
        if t.params.get("from_control"):
            continue
        t.params["replay"] = True
        replayed += 1
        t.why += f"; {_HOW.get(t.action, 'on replays of the captured launch')}"
    ctx.notes.append(
        f"replay: the program runs once (find_launch); {replayed} collection(s) run on replays "
        f"of the captured launch in the replay worker. Where replay cannot stand in ({FALLBACK})"
        f", they run the program again and the report says why; --no-replay runs the program "
        f"for every collection")
