"""What every recipe plans with: the request, the builder of tasks and the shared tasks.

A recipe adds tasks through :meth:`PlanContext.add`; the tasks several recipes share (the
control task, the parent's clean timing, the collections ``attribute`` maps) live here so
that a second recipe that needs them reuses them instead of adding another run.

Example:
    >>> fmt_scope({"launch": "all", "cta": "0", "warp": "each"})
    'cta=0, warp=each'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argusdb.collectors.regions import ProgramSource, Region
from argusdb.errors import InputError, PlanError
from argusdb.observe.planner.plan import Task
from argusdb.observe.planner.profiler_host import PassCounter

#: Launches run before measuring (compilation, caches, clocks settle) and launches measured.
LAUNCHES_WARMUP = 5
LAUNCHES_MEASURED = 20


@dataclass
class PlanContext:
    """The state one ``plan()`` call shares among its recipes.

    Attributes:
        plan_id: prefix of every task id.
        src: the kernel source.
        region: the region asked about.
        scope: coordinate → value (``all`` where not given).
        intra: the intra-kernel coordinates of ``scope`` that are not ``all``.
        command: the user's command (argv), None for the harness form.
        counter: pass counter for metric lists.
        chip: CUPTI chip name of the target, None when the target is not known.
        target: how the target was resolved (for the reasons recipes give).
        measured: launches measured.
        select: the command form's choice among the program's binaries (``--option``).
        control: the ``find_launch`` task every collection depends on.
    """

    plan_id: str
    src: ProgramSource
    region: Region
    scope: dict[str, str]
    intra: list[str]
    command: list[str] | None
    counter: PassCounter
    chip: str | None
    target: str
    measured: int = LAUNCHES_MEASURED
    select: dict[str, str] = field(default_factory=dict)
    tasks: list[Task] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Collect tasks whose per-PC or per-line values ``attribute`` maps onto the region.
    mapped: list[Task] = field(default_factory=list)
    control: Task | None = None
    parent_timing: Task | None = None
    #: Kernel-only collections run on replays of the launch the control run captures.
    replay: bool = False
    #: The parent's timing on replays (the parent side of a derivation from replays).
    replay_timing: Task | None = None
    #: Requested signals that cannot apply to the region, with the reason.
    not_applicable: dict[str, str] = field(default_factory=dict)

    @property
    def kernel(self) -> str:
        return self.region.kernel

    @property
    def launch(self) -> str:
        return self.scope["launch"]

    def add(self, name: str, kind: str, action: str, why: str, params: dict[str, Any],
            depends_on: list[Task]) -> Task:
        """Add a task; run groups are numbered once the plan is in topological order."""
        run = "?" if kind == "collect" else None
        t = Task(f"{self.plan_id}.{name}", kind, [d.id for d in depends_on], run, why, action,
                 params)
        self.tasks.append(t)
        return t

    def root(self) -> Task:
        """The control task (added by ``plan`` before any recipe runs)."""
        assert self.control is not None
        return self.control

    def clean_timing(self, purpose: str) -> Task:
        """The parent's clean activity timing, added once and shared by every recipe that
        needs it; ``purpose`` is appended to its reason."""
        t = self.parent_timing
        if t is None:
            t = self.parent_timing = self.add(
                "cupti_timing.parent", "collect", "cupti_timing",
                f"clean activity timing of {self.kernel} ({purpose})",
                {"version": "parent", "launches": self.measured, "launch": self.launch,
                 "signals": ["duration"]}, [self.root()])
            if self.replay:  # in context: the program's own launches, in the control run
                t.params["from_control"] = True
                t.why += (": the control run records it (CUPTI activity from start to exit), "
                          "the in-context duration of the program's launches; the launch whose "
                          "inputs the capture copied is kept apart")
        elif purpose not in t.why:
            t.why += f"; also {purpose}"
        return t

    def replayed_timing(self, purpose: str) -> Task:
        """The parent's activity timing on replays of the captured launch (added once): the
        parent side of a derivation whose variant is timed on replays too."""
        t = self.replay_timing
        if t is None:
            t = self.replay_timing = self.add(
                "cupti_timing.parent_replay", "collect", "cupti_timing",
                f"activity timing of {self.kernel} on replays of the captured launch "
                f"({purpose}); isolated from the program, so only replays are compared with it",
                {"version": "parent", "launches": self.measured, "launch": self.launch,
                 "signals": ["duration"]}, [self.root()])
        return t

    def variant(self, action: str, params: dict[str, Any]) -> str:
        """Make the variant now (pure source transform) so a plan never promises one that
        cannot be made; returns its transform label, e.g.
        ``forced_wait:softmax/softmax_fwd/load``."""
        from argusdb.observe.transforms import apply

        try:
            return apply(action, self.src, params).transform
        except InputError as exc:
            raise PlanError(f"cannot plan the {action} variant: {exc}") from exc


def fmt_scope(sc: dict[str, str]) -> str:
    """``cta=0, warp=each``: the coordinates of a scope that are not ``all``."""
    return ", ".join(f"{k}={v}" for k, v in sc.items() if v != "all")
