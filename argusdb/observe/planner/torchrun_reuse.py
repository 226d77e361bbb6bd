"""Reuse for torchrun observations: stored launches that already answer a launch of the plan.

A collect task of :mod:`argusdb.observe.planner.torchrun` is one launch of every rank under one
recorder
mode. A stored launch group answers it, and is reused instead of launching again, when

- its runs are of the *same program version* the plan measures (the same source and options,
  so the same binary: :func:`argusdb.observe.planner.reuse.parent_versions`, as the single-process
  planner decides it);
- it was recorded with the *same collector set*: the task's mode, read from the runs' facts
  (``events``: the span recorder, timing-clean, no forced waits; ``forced``: the span recorder
  with collectives forced synchronous; ``profiler``: torch.profiler host ops; ``cupti``: Kineto
  with CUDA activity only), never from a name;
- it has the *same rank count*: ``world_size`` equal to the plan's and one run per rank;
- its rows hold *what the task answers*: the program's steps under the plan's step mark (clean
  and forced launches), the ``record_function`` range asked for (``duration`` of a range), host
  ops (profiler) or the kernel's records (cupti) on every rank.

A launch group that fails a condition is named in the plan's notes with the reason. The newest
qualifying launch group wins.

Example:
    >>> from argusdb.store.embedded import Store
    >>> with open_store("argus.duckdb", read_only=True) as store:  # doctest: +SKIP
    ...     hit, notes = find(store, task, versions, target, 2, "step")
"""

from __future__ import annotations

from typing import Any

from argusdb.observe.planner.plan import Task
from argusdb.observe.planner.reuse import Versions
from argusdb.store.embedded import Store

#: Run facts of each recorder mode (SQL over ``run``), and words for them.
MODE_RUNS = {
    "events": ("collector = 'torchdist' AND timing_clean AND NOT forced_wait",
               "clean span timing"),
    "forced": ("collector = 'torchdist' AND forced_wait", "collectives forced synchronous"),
    "profiler": ("collector = 'kineto' AND torch_profiler", "torch.profiler host ops"),
    "cupti": ("collector = 'kineto' AND activity_tracing AND NOT torch_profiler "
              "AND timing_clean", "CUPTI activity only"),
}


def _needs(task: Task, target: Any, step_mark: str) -> list[tuple[str, list[Any], str]]:
    """(SQL count over one run ``?``, its parameters, what is missing when 0) per requirement."""
    mode = task.params["mode"]
    sigs = set(task.params.get("signals") or [])
    steps = ("SELECT count(*) FROM trace_span WHERE run_id = ? AND kind = 'step' AND name = ?",
             [step_mark], f"no steps named {step_mark!r} (the plan's step mark)")
    out: list[tuple[str, list[Any], str]] = []
    if mode in ("events", "forced"):
        out.append(steps)
        if mode == "events" and "duration" in sigs and target.kind == "range":
            out.append(("SELECT count(*) FROM trace_span WHERE run_id = ? AND kind = 'span' "
                        "AND name = ?", [target.name],
                        f"no record_function range {target.name!r}"))
    elif mode == "profiler":
        out.append(("SELECT count(*) FROM trace_span WHERE run_id = ? AND kind = 'host_op'", [],
                    "no host ops"))
    elif mode == "cupti":
        out.append(("SELECT count(*) FROM kernel_launch AS k LEFT JOIN run AS t "
                    "ON t.run_id = k.run_id WHERE coalesce(t.meta->>'$.timeline_of.run_id', "
                    "k.run_id) = ? AND k.kernel = ?", [target.name],
                    f"no kernel records of {target.name}"))
    return out


def find(store: Store, task: Task, versions: Versions, target: Any, world: int,
         step_mark: str) -> tuple[dict[str, Any] | None, list[str]]:
    """A stored launch group ``task`` can reuse, and notes on those it could not.

    Returns:
        ``({"launch_group", "runs", "program_version", "why"}, notes)`` or ``(None, notes)``.
    """
    mode = task.params["mode"]
    if mode not in MODE_RUNS or not versions.ids:
        return None, []
    cond, words = MODE_RUNS[mode]
    marks = ", ".join("?" for _ in versions.ids)
    groups = store.rows(
        f"SELECT launch_group, any_value(program_version) AS program_version, "
        f"min(world_size) AS world_min, max(world_size) AS world_max, "
        f"count(DISTINCT rank) AS ranks, count(*) AS runs, "
        f"list(run_id ORDER BY rank) AS run_ids, max(ingested_at) AS newest "
        f"FROM run WHERE launch_group IS NOT NULL AND program_version IN ({marks}) AND {cond} "
        f"GROUP BY launch_group ORDER BY newest DESC, launch_group", list(versions.ids))
    notes: list[str] = []
    needs = _needs(task, target, step_mark)
    for g in groups:
        lg = g["launch_group"]
        if g["world_min"] != world or g["world_max"] != world or g["ranks"] != world \
                or g["runs"] != world:
            notes.append(f"launch group {lg} not reused for {task.action}: {g['ranks']} "
                         f"rank(s) of world size {g['world_max']}, the plan launches {world}")
            continue
        missing = []
        for sql, params, what in needs:
            short = [r for r in g["run_ids"]
                     if (store.sql(sql, [r, *params]).fetchone() or (0,))[0] == 0]
            if short:
                missing.append(f"{what} in {len(short)} of its {world} runs")
        if missing:
            notes.append(f"launch group {lg} not reused for {task.action}: "
                         f"{'; '.join(missing)}")
            continue
        return {"launch_group": lg, "runs": list(g["run_ids"]),
                "program_version": g["program_version"],
                "why": f"launch group {lg} ({words}, {world} ranks) of {versions.why} already "
                       f"holds what {task.action} collects"}, notes
    return None, notes
