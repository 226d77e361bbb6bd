"""A measurement plan: a DAG of control / transform / collect / synthesize tasks.

The JSON form is the contract with the runner (``argusdb.observe.runner.execute``)::

    {"plan_id": str, "request": {"source", "region", "signals", "scope"},
     "tasks": [{"id", "kind", "depends_on", "run", "why", "action", "params", "reuse",
                "estimate"}]}

``run`` names the run group a collect task executes in (one execution of one program version
under one collection configuration); other kinds have ``run = None``. ``reuse`` is set when
compatible evidence is already in the store: the runner skips the task and later tasks read
the named run instead.

Example:
    >>> p = Plan("p-1", {"region": "softmax/softmax_fwd"}, [Task("c", "control", [], None,
    ...          "find the launch", "find_launch", {})])
    >>> [t.id for t in p.ordered()]
    ['c']
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from graphlib import CycleError, TopologicalSorter
from typing import Any

from argusdb.errors import PlanError

KINDS = ("control", "transform", "collect", "synthesize")


@dataclass
class Task:
    """One node of a plan.

    Attributes:
        id: unique in the store (``<plan_id>.<name>``): the runner uses it as ``task.task_id``.
        kind: one of :data:`KINDS`.
        depends_on: ids of tasks that must finish first.
        run: run group of a collect task, else None.
        why: why this task exists and, for collect tasks, why it is a run of its own.
        action: what the runner does (``find_launch``, ``cupti_timing``, ...).
        params: the action's parameters (see PLAN_CONTRACT).
        reuse: ``{"run_id", "why"}`` when the store already holds what the task would collect.
        estimate: ``{"wall_s", "gpu_s", "from_tasks", "basis"}``: medians of past tasks of
            the same action and path in the store, else shipped H200 medians (``basis`` says
            which).
        runs_program: in the command form, whether the task runs the user's program (True) or
            the replay worker on the captured launch, or reads the control run (False); None in
            the harness form.
    """

    id: str
    kind: str
    depends_on: list[str]
    run: str | None
    why: str
    action: str
    params: dict[str, Any] = field(default_factory=dict)
    reuse: dict[str, Any] | None = None
    estimate: dict[str, Any] | None = None
    runs_program: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    """A request and its tasks, in topological order."""

    plan_id: str
    request: dict[str, Any]
    tasks: list[Task]
    notes: list[str] = field(default_factory=list)

    def task(self, task_id: str) -> Task:
        return next(t for t in self.tasks if t.id == task_id)

    def by_action(self, action: str) -> list[Task]:
        """Tasks of one action, in plan order."""
        return [t for t in self.tasks if t.action == action]

    def graph(self) -> dict[str, set[str]]:
        return {t.id: set(t.depends_on) for t in self.tasks}

    def ordered(self) -> list[Task]:
        """Tasks in topological order (graphlib), ties broken by plan order; PlanError on a cycle.
        """
        index = {t.id: i for i, t in enumerate(self.tasks)}
        ts = TopologicalSorter(self.graph())
        try:
            ts.prepare()
        except CycleError as exc:
            raise PlanError(f"plan {self.plan_id} has a dependency cycle: {exc.args[1]}") from exc
        out: list[Task] = []
        while ts.is_active():
            ready = sorted(ts.get_ready(), key=index.__getitem__)
            out.extend(self.task(i) for i in ready)
            ts.done(*ready)
        return out

    def validate(self) -> None:
        """Check the plan's invariants (kinds, known dependencies, acyclic, runs, reasons)."""
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise PlanError(f"plan {self.plan_id}: duplicate task ids")
        for t in self.tasks:
            if t.kind not in KINDS:
                raise PlanError(f"task {t.id}: unknown kind {t.kind!r}")
            missing = set(t.depends_on) - set(ids)
            if missing:
                raise PlanError(f"task {t.id} depends on unknown tasks {sorted(missing)}")
            if (t.kind == "collect") != (t.run is not None):
                raise PlanError(f"task {t.id}: only collect tasks have a run group")
            if not t.why:
                raise PlanError(f"task {t.id} has no reason")
        self.ordered()

    def to_json(self) -> dict[str, Any]:
        return {"plan_id": self.plan_id, "request": self.request,
                "tasks": [t.to_json() for t in self.tasks], "notes": self.notes}
