"""What an observation is and what every form of observe shares: the result
(:class:`Observation`), the store it writes (:func:`observation_store`), its work folder, the
plan's estimated cost (:func:`estimate`) and its trimming to a budget (:func:`trim`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from argusdb.observe.planner.plan import Plan
    from argusdb.store.embedded import Store


#: A file in each folder argusdb's runner writes task artefacts into (``<store>.runs/<plan>``):
#: the kernel copies and variants there are never the user's module.
WORK_MARKER = ".argus-work"


@dataclass
class Observation:
    """What ``observe`` returns: the plan, and once run, the evidence and a report."""

    plan: Plan
    evidence: pa.Table | None = None
    report: dict[str, Any] = field(default_factory=dict)


@contextmanager
def observation_store(store: str | Path | Store | None, dry_run: bool
                      ) -> Iterator[Store | None]:
    """The store an observation plans against and writes to: ``store`` itself when it is open
    (the caller closes it), else the store at that path or URI, created unless this is a dry
    run (a dry run against a store that does not exist plans without one), closed afterwards.

    Example:
        >>> with observation_store(None, dry_run=True) as st:
        ...     st is None
        True
    """
    if not isinstance(store, str | Path):
        yield store
        return
    from argusdb.store import open_store

    exists = str(store).startswith("ducklake:") or Path(store).exists()
    st = open_store(store, create=not dry_run) if exists or not dry_run else None
    try:
        yield st
    finally:
        if st is not None:
            st.close()


def mark_work_folder(folder: Path) -> Path:
    """Create ``folder`` (a plan's task folders go below it) with :data:`WORK_MARKER` in it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / WORK_MARKER).write_text("task folders of argusdb observe; not user sources\n")
    return folder


def trim(p: Plan, budget_s: float, replan: Callable[[list[str]], Plan]) -> Plan:
    """Drop the signals whose own tasks cost most until the plan's estimate fits ``budget_s``.

    Costs are the medians of past tasks of each action recorded in the store (``plan_cost``).
    A task shared by several signals (the control task, a clean timing) is charged to none.

    Raises:
        PlanError: some task of the plan has no recorded cost, so the budget cannot be checked.
    """
    from argusdb.errors import PlanError

    est = estimate(p)
    if est["unknown"]:
        raise PlanError(f"--budget-s {budget_s:g}: no recorded cost for tasks "
                        f"{', '.join(t.rsplit('.', 1)[-1] for t in est['unknown'])} (no past "
                        f"task of their action in the store), so the plan cannot be fitted; run "
                        f"it once without a budget, or pass a store with past runs")
    signals = list(p.request["signals"])
    dropped: list[str] = []
    while est["wall_s"] > budget_s and len(signals) > 1:
        # Drop the signal whose removal saves most (tasks shared with other signals stay).
        options = {s: replan([x for x in signals if x != s]) for s in signals}
        saved = {s: est["wall_s"] - estimate(q)["wall_s"] for s, q in options.items()}
        worst = max(signals, key=lambda s: saved[s])
        before = est["wall_s"]
        signals.remove(worst)
        p, est = options[worst], estimate(options[worst])
        dropped.append(f"dropped {worst}: the plan was estimated at {before:.3g} s, over the "
                       f"budget of {budget_s:g} s, and leaving {worst} out saves the most "
                       f"({saved[worst]:.3g} s of recorded task costs)")
    if est["wall_s"] > budget_s:
        raise PlanError(f"--budget-s {budget_s:g}: even {', '.join(signals)} alone is estimated "
                        f"at {est['wall_s']:.3g} s; raise the budget")
    p.notes.extend(dropped)
    p.request["budget_s"] = budget_s
    p.request["dropped_signals"] = [d.split(":")[0].removeprefix("dropped ") for d in dropped]
    return p


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
            "unknown": [t.id for t in todo if not t.estimate],
            "basis": sorted({e.get("basis") or "median of past tasks in the store"
                             for e in known}),
            "program_runs": sum(1 for t in todo if t.runs_program)}
