"""What the rules look at: evidence streams, the combinations a query makes, and findings.

A *stream* is one evidence-bearing FROM item of one scope (the ``evidence`` view, a construct,
or a CTE/derived table built from them) with the properties of the rows it brings: program
versions, runs, tasks, classes, standings (clean or perturbed by which signature), replay
passes, scope levels. A *combination* is a place where the query puts rows of streams together:
a join of two streams, an aggregate or a window over one stream (one combination per group
when the store can tell the groups apart). Each compatibility rule asks one question of each
combination: does it put together rows that differ in *my* property, without a key that keeps
them apart (``separated``) or an acknowledgement?

Example:
    >>> Props(versions={"a", "b"}).mixed("version")
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from argusdb.checker.parse import position
from argusdb.errors import Finding
from argusdb.schema.shape import INTRA_KERNEL_SCOPE

#: Columns whose equality (in a join) or presence (in GROUP BY / PARTITION BY) keeps rows that
#: differ in a property apart. A run is of one program version and one signature.
KEY_COLUMNS: dict[str, frozenset[str]] = {
    "version": frozenset({"program_version", "run_id", "evidence_id"}),
    "standing": frozenset({"run_id", "signature", "timing_clean", "evidence_id"}),
    "pass": frozenset({"replay_pass", "evidence_id"}),
    "class": frozenset({"evidence_class", "evidence_id"}),
    "scope": frozenset({*INTRA_KERNEL_SCOPE, "evidence_id"}),
    # per instruction, per line, per region or kernel-wide: a PC, a line or the class says
    "granularity": frozenset({"pc", "source_line", "evidence_id"}),
    # a signal has one unit within one version and device (the version rule keeps those apart)
    "unit": frozenset({"unit", "signal", "evidence_id"}),
    # sample counts of one collector's sampler (a run is of one collector)
    "sampler": frozenset({"collector", "kind", "run_id", "signature", "evidence_id"}),
    # a run is on one device
    "device": frozenset({"device", "device_info", "run_id", "evidence_id"}),
    # raw timestamps of one run are on one process's clock; aligned ones of a launch group on
    # its reference clock (judged only where timestamps meet: see CLOCK_PROPERTIES)
    "clock": frozenset({"run_id", "clock_domain"}),
    "aligned_clock": frozenset({"run_id", "aligned_domain", "launch_group"}),
}
#: Properties judged only at combinations made for them (where timestamps meet), not at every
#: join or aggregate (durations are differences on one clock: comparable across clocks).
CLOCK_PROPERTIES = frozenset({"clock", "aligned_clock"})


#: Props sets filled from one metadata column each (runs and tasks: see ``Props.add``).
_PROP_COLUMNS = (("versions", "program_version"), ("classes", "evidence_class"),
                 ("standings", "_standing"), ("signatures", "signature"),
                 ("passes", "replay_pass"), ("signals", "signal"), ("scopes", "_scope"),
                 ("units", "unit"), ("granularities", "_granularity"), ("devices", "device"),
                 ("clocks", "_clock"), ("aligned_clocks", "_aligned_clock"),
                 ("samplers", "_sampler"))
#: Properties whose rows are mixed as soon as they hold two values, and the Props set of each
#: (the others: ``Props.mixed``).
_MIXED_WHEN_TWO = {"version": "versions", "scope": "scopes", "granularity": "granularities",
                   "unit": "units", "device": "devices", "clock": "clocks",
                   "aligned_clock": "aligned_clocks", "sampler": "samplers"}


@dataclass
class Props:
    """Distinct property values of a set of evidence rows."""

    versions: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    standings: set[str] = field(default_factory=set)
    signatures: set[str] = field(default_factory=set)
    passes: set[int] = field(default_factory=set)
    signals: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    units: set[str] = field(default_factory=set)
    granularities: set[str] = field(default_factory=set)
    devices: set[str] = field(default_factory=set)
    clocks: set[str] = field(default_factory=set)
    aligned_clocks: set[str] = field(default_factory=set)
    samplers: set[str] = field(default_factory=set)
    rows: int = 0
    #: ``runs`` / ``tasks`` are samples (some metadata row had more than it lists); then
    #: ``run_count_at_least`` is a lower bound of the runs.
    runs_sampled: bool = False
    tasks_sampled: bool = False
    run_count_at_least: int = 0

    @classmethod
    def of_rows(cls, rows: list[dict[str, Any]]) -> Props:
        p = cls()
        for r in rows:
            p.add(r)
        return p

    def add(self, r: dict[str, Any]) -> None:
        """Add one metadata row: per run (``run_id``, ``task_id``) or grouped (``_runs``,
        ``_tasks``: samples, see :mod:`argusdb.checker.metadata`)."""
        for attr, col in _PROP_COLUMNS:
            v = r.get(col)
            if v is not None:
                getattr(self, attr).add(v)
        if "_runs" in r:
            self.runs.update(r["_runs"])
            self.tasks.update(r["_tasks"])
            self.runs_sampled |= not r["_runs_complete"]
            self.tasks_sampled |= not r["_tasks_complete"]
            # a sample that is not all of them leaves at least one run out
            self.run_count_at_least = max(self.run_count_at_least,
                                          len(r["_runs"]) + (not r["_runs_complete"]))
        else:
            for attr, col in (("runs", "run_id"), ("tasks", "task_id")):
                v = r.get(col)
                if v is not None:
                    getattr(self, attr).add(v)
        self.rows += int(r.get("_rows") or 0)

    def merge(self, other: Props) -> Props:
        out = Props()
        for attr in ("versions", "runs", "tasks", "classes", "standings", "signatures",
                     "passes", "signals", "scopes", "units", "granularities", "devices",
                     "clocks", "aligned_clocks", "samplers"):
            setattr(out, attr, getattr(self, attr) | getattr(other, attr))
        out.rows = self.rows + other.rows
        out.runs_sampled = self.runs_sampled or other.runs_sampled
        out.tasks_sampled = self.tasks_sampled or other.tasks_sampled
        out.run_count_at_least = max(self.run_count_at_least, other.run_count_at_least)
        return out

    def mixed(self, prop: str) -> bool:
        """Whether these rows differ in ``prop`` in the way its rule refuses."""
        attr = _MIXED_WHEN_TWO.get(prop)
        if attr is not None:
            return len(getattr(self, attr)) > 1
        if prop == "standing":
            # a conflict is between runs: inside one run, clean counters next to its own
            # perturbed timing are not a splice (a row's sample holds its smallest and its
            # largest run, so two runs show as two)
            return len(self.standings) > 1 and len(self.runs) > 1
        if prop == "pass":
            return len(self.passes) > 1 and len(self.signals) > 1
        if prop == "class":
            return "derived" in self.classes and bool(self.classes - {"derived"})
        raise ValueError(prop)

    def to_json(self) -> dict[str, Any]:
        return {"program_versions": sorted(self.versions), "runs": sorted(self.runs),
                "tasks": sorted(self.tasks), "evidence_classes": sorted(self.classes),
                "interference_signatures": sorted(self.signatures),
                "standings": sorted(self.standings), "replay_passes": sorted(self.passes),
                "signals": sorted(self.signals), "scopes": sorted(self.scopes),
                "units": sorted(self.units), "granularities": sorted(self.granularities),
                "devices": sorted(self.devices), "clock_domains": sorted(self.clocks),
                "samplers": sorted(self.samplers),
                "rows": self.rows,
                "runs_sampled": self.runs_sampled, "tasks_sampled": self.tasks_sampled,
                "run_count_at_least": max(len(self.runs), self.run_count_at_least)}


#: Metadata rows of a base stream (its own scope's predicates, and the extra predicates given,
#: over columns of that scope) with the values of the given columns of that scope, and the row
#: field holding each; None when a column or predicate is not over its metadata.
Regroup = Callable[[list["tuple[str, str] | exp.Expression"], tuple[exp.Expression, ...]],
                   "tuple[list[dict[str, Any]], list[str]] | None"]


@dataclass
class Lineage:
    """Where a derived stream's columns come from: one base stream, through plain column
    references (and GROUP BY keys) only, so that a derived row with ``c = x`` holds only
    evidence of base rows whose traced column is ``x``.

    Example:
        >>> Lineage(lambda cols: [], {"r": ("e", "region_id")}).columns["r"]
        ('e', 'region_id')
    """

    #: The base stream's metadata rows grouped by columns of its scope (see ``Regroup``).
    regroup: Regroup
    #: Output column → (source alias, column) in the base stream's scope.
    columns: dict[str, tuple[str, str]]
    #: The GROUP BY columns of each aggregation on the way from the base stream, innermost
    #: first (what ``aggregated_scope`` keeps of the rows' scope levels).
    aggregations: list[frozenset[str]] = field(default_factory=list)
    #: Predicates of outer scopes over traced columns, rewritten over the base stream's scope
    #: (they narrow the rows every regroup reads).
    narrowed: tuple[exp.Expression, ...] = ()

    def rows(self, columns: list[tuple[str, str] | exp.Expression]
             ) -> tuple[list[dict[str, Any]], list[str]] | None:
        """The base rows (under ``narrowed``) grouped by ``columns`` (of the base stream's
        scope, or expressions over them; see ``Regroup``)."""
        return self.regroup(columns, self.narrowed)


@dataclass
class Stream:
    """Evidence rows one FROM item brings into a scope."""

    alias: str
    relation: str
    node: Any
    props: Props
    keys: dict[str, set[str]]
    values: set[str]
    acks: set[str] = field(default_factory=set)
    diffs_versions: bool = False
    base: bool = False
    #: The query's predicates on this item, over metadata columns (base streams).
    predicates: list[Any] = field(default_factory=list)
    #: Renderers of the key expressions fetched with the metadata rows, as _k<i> ...
    keys_sql: list[Any] = field(default_factory=list)
    #: ... and the ids of the query's key nodes they came from, in the same order.
    key_ids: list[int] = field(default_factory=list)
    #: The query restricts scope coordinates of this stream (an aggregate stays a slice).
    scope_filtered: bool = False
    #: Base streams: their metadata rows grouped again by other columns of their scope (for
    #: the partitions of an outer scope); derived streams: where their columns come from.
    regroup: Regroup | None = None
    lineage: Lineage | None = None
    #: Output columns that hold one literal per row set (``'s2' AS v`` in each branch of a
    #: UNION ALL): column → literal → properties of the rows that carry it.
    labels: dict[str, dict[Any, Props]] = field(default_factory=dict)
    #: Properties each listed column keeps apart when grouped or partitioned by (labels whose
    #: rows are not mixed in them); no key of a join (two streams' labels say nothing alike).
    group_keys: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class Combination:
    """Rows of one or more streams put together at one place of the query."""

    kind: str  # 'join', 'aggregate' or 'window'
    node: exp.Expression
    streams: tuple[Stream, ...]
    props: Props
    separated: set[str]
    group: str = ""
    #: How many other groups of the same place also mix (set by Context.mixing).
    more: int = 0
    #: The properties this combination is about (None: all of them).
    only: frozenset[str] | None = None

    @property
    def acks(self) -> set[str]:
        return set().union(*(s.acks for s in self.streams))

    @property
    def diffs_versions(self) -> bool:
        return any(s.diffs_versions for s in self.streams)

    @property
    def intervals(self) -> bool:
        """Whether intervals (``interval_event`` or an interval macro's rows) meet here."""
        from argusdb.checker.constructs import CONSTRUCTS

        return any(s.relation == "interval_event" or (
            s.relation in CONSTRUCTS and CONSTRUCTS[s.relation].base == "interval_event")
            for s in self.streams)

    def what(self) -> str:
        """Human words for the combination, e.g. 'the aggregate over e (group region_id=x)'."""
        names = " and ".join(f"{s.alias}" + (f" ({s.relation})" if s.relation != s.alias
                                              else "") for s in self.streams)
        kind = {"join": "the join of", "aggregate": "the aggregate over",
                "window": "the window function over"}[self.kind]
        grp = f" in group {self.group}" if self.group else ""
        if self.more:
            grp += f" (and {self.more} more group{'s' if self.more > 1 else ''})"
        return f"{kind} {names}{grp}"


@dataclass
class Context:
    """Everything the rules see about one statement."""

    sql: str
    statement: exp.Expression
    statements: list[exp.Expression] = field(default_factory=list)
    combinations: list[Combination] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)
    unknown_tables: list[tuple[exp.Expression, str, str]] = field(default_factory=list)
    unknown_columns: list[tuple[exp.Expression, str, str]] = field(default_factory=list)
    #: Unqualified columns two sources of their scope have (DuckDB refuses to bind them),
    #: with the aliases of those sources.
    ambiguous_columns: list[tuple[exp.Expression, str, list[str]]] = field(
        default_factory=list)
    constructs: list[dict[str, Any]] = field(default_factory=list)
    acknowledgements: list[dict[str, Any]] = field(default_factory=list)
    bad_constructs: list[tuple[exp.Expression, str, str]] = field(default_factory=list)
    _nodes: list[Any] | None = field(default=None, repr=False)

    def nodes(self) -> list[Any]:
        """Every node of every statement, walked once and shared by the sandbox rules."""
        if self._nodes is None:
            self._nodes = [n for st in (self.statements or [self.statement]) for n in st.walk()]
        return self._nodes

    def finding(self, code: str, name: str, node: exp.Expression | None, message: str,
                remedy: str, **extra: Any) -> Finding:
        line, col = position(self.sql, node)
        return Finding(code, name, message, remedy, line, col, dict(extra))

    def mixing(self, prop: str) -> list[Combination]:
        """Combinations that put rows differing in ``prop`` together without a key; one per
        place in the query (the first mixed group stands for the others, see ``more``)."""
        out: dict[tuple[int, str], Combination] = {}
        for c in self.combinations:
            if prop in c.separated or not c.props.mixed(prop) or (
                    c.only is not None and prop not in c.only) or (
                    prop in CLOCK_PROPERTIES and c.only is None):
                continue
            key = (id(c.node), ",".join(s.alias for s in c.streams))
            if key in out:
                out[key].more += 1
            else:
                c.more = 0
                out[key] = c
        return list(out.values())
