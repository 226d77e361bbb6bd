"""Selecting the evidence an answer rests on: versions, runs and cohorts of comparable samples.

All reads go through the checked query surface (:meth:`argusdb.api.Connection.query`), one
program version per query, so every answer rests on questions the checker accepted.

A **cohort** is the set of rows of one region, version and signal that can be compared as
repeats of one measurement: same *standing*, same evidence class and same scope (every scope
coordinate except ``launch``). The standing is the checker's (see
``argusdb/store_metadata.py``): ``clean``, or the run's interference signature when the
measurement perturbs the value (a timing value from a run that is not ``timing_clean``, any
value of an instrumented or forced-wait run); ``derived`` for derived values. Counters from a
replayed run are clean: replay re-executes, it does not change what executes.

Its **samples** are per (run, launch) values: rows that share run, launch and scope are parts
of one value (e.g. attributed shares of several instructions) and are summed; distinct launches
or runs are repeats.

Example:
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     ref = resolve_version(db, "config=bk32_s1", region="matmul/matmul_kernel")
    ...     found = cohorts(fetch_rows(db, "matmul/matmul_kernel", ref, ["duration"]))
    >>> len(found)
    1
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from argusdb.checker.metadata import TIMING_UNITS
from argusdb.errors import UsageError
from argusdb.shape import INTRA_KERNEL_SCOPE

if TYPE_CHECKING:
    from argusdb.api import Connection

#: Scope coordinates that must be equal for two rows to be repeats of one measurement.
NESTED_SCOPE = INTRA_KERNEL_SCOPE


def lit(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


@dataclass(frozen=True)
class VersionRef:
    """A program version as the user named it, optionally narrowed to some of its runs."""

    program_version: str
    label: str
    runs: tuple[str, ...] = ()


@dataclass(frozen=True)
class CohortKey:
    """What two samples must share to be compared: standing, class and scope."""

    standing: str
    evidence_class: str
    scope: tuple[tuple[str, str], ...] = ()

    def scope_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.scope) or "per launch"

    def to_json(self) -> dict[str, Any]:
        return {"standing": self.standing, "evidence_class": self.evidence_class,
                "scope": dict(self.scope)}


@dataclass
class Cohort:
    """Comparable samples of one region, version and signal."""

    program_version: str
    signal: str
    key: CohortKey
    unit: str | None = None
    timing_clean: bool = True
    values: dict[tuple[str, str], float] = field(default_factory=dict)
    tasks: set[str] = field(default_factory=set)
    signatures: set[str] = field(default_factory=set)
    entropy_weighted: float = 0.0
    weight: float = 0.0
    conditions: list[Any] = field(default_factory=list)
    related_runs: set[str] = field(default_factory=set)

    @property
    def samples(self) -> list[float]:
        return [self.values[k] for k in sorted(self.values)]

    @property
    def signature(self) -> str:
        """The interference signatures of the cohort's runs ('; '-joined)."""
        return "; ".join(sorted(self.signatures))

    @property
    def runs(self) -> list[str]:
        return sorted({r for r, _ in self.values})

    def run_samples(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = defaultdict(list)
        for (run, _), v in sorted(self.values.items()):
            out[run].append(v)
        return dict(out)

    @property
    def association_entropy(self) -> float:
        """Value-weighted association entropy (bits) of the rows that went in."""
        return self.entropy_weighted / self.weight if self.weight else 0.0


def _rows(db: Connection, sql: str) -> list[dict[str, Any]]:
    table = db.query(sql)  # column by column: Arrow's row-wise to_pylist is 3x slower
    names = table.column_names
    return [dict(zip(names, vals, strict=True))
            for vals in zip(*(c.to_pylist() for c in table.columns), strict=True)]


def resolve_version(db: Connection, text: str, region: str | None = None) -> VersionRef:
    """Resolve a version selector to one program version.

    ``text`` is a program version ID or a unique prefix of one (>= 4 chars); a run ID or prefix
    (that run's version, narrowed to that run); or ``KEY=VALUE[,KEY=VALUE]`` matched against the
    versions' ``--option`` values (restricted to the program of ``region`` when given). Variants
    share their parent's options: ``KEY=VALUE`` names the original, ``transform=T`` a variant.

    Raises:
        UsageError: nothing or more than one version matches.
    """
    t = text.strip()
    program = region.split("/", 1)[0] if region else None
    versions = _rows(db, "SELECT program_version, program, options, transform "
                         "FROM program_version ORDER BY program_version")
    if program:
        versions = [v for v in versions if v["program"] == program]
    if "=" in t:
        want = {k.strip(): val.strip() for k, val in
                (p.split("=", 1) for p in t.split(",") if "=" in p)}

        def matches(v: dict[str, Any]) -> bool:
            o = json.loads(v["options"] or "{}")
            return all((v["transform"] if k == "transform" else o.get(k)) == val
                       for k, val in want.items())

        hits = [v for v in versions if matches(v)]
        if len(hits) > 1 and "transform" not in want:
            # Variants (forced waits, probes) share their parent's options: KEY=VALUE names the
            # original unless it says transform=...
            hits = [v for v in hits if v["transform"] is None] or hits
        return VersionRef(_one(hits, t, versions), t)
    if len(t) < 4:
        raise UsageError(f"version {t!r}: give at least 4 characters of a program version or "
                         "run ID, or KEY=VALUE of its --option values")
    hits = [v for v in versions if v["program_version"].startswith(t)]
    runs = _rows(db, f"SELECT run_id, program_version FROM run "
                     f"WHERE starts_with(run_id, {lit(t)}) ORDER BY run_id")
    if program:
        allowed = {v["program_version"] for v in versions}
        runs = [r for r in runs if r["program_version"] in allowed]
    if hits and runs:
        raise UsageError(f"version {t!r} is the prefix of a program version and of a run; "
                         "give more characters")
    if runs:
        if len(runs) > 1:
            raise UsageError(f"run prefix {t!r} matches {len(runs)} runs "
                             f"({', '.join(r['run_id'] for r in runs[:4])}); give more characters")
        return VersionRef(runs[0]["program_version"], t, (runs[0]["run_id"],))
    return VersionRef(_one(hits, t, versions), t)


def _one(hits: list[dict[str, Any]], text: str, versions: list[dict[str, Any]]) -> str:
    if len(hits) == 1:
        return str(hits[0]["program_version"])
    listing = "; ".join(f"{v['program_version']} {v['options']}" for v in versions[:8])
    if not hits:
        raise UsageError(f"version {text!r} matches no program version of this store. "
                         f"Known versions: {listing or 'none'} (see 'argus runs')")
    raise UsageError(f"version {text!r} matches {len(hits)} program versions; name one by ID "
                     f"or add KEY=VALUE pairs. Candidates: {listing}")


def fetch_where(db: Connection, where: list[str]) -> list[dict[str, Any]]:
    """Evidence rows (with their runs' facts) matching SQL predicates over ``e`` (evidence) and
    ``r`` (run), in the shape :func:`cohorts` reads. The predicates are the caller's SQL."""
    sql = (f"SELECT e.program_version, e.run_id, e.task_id, e.signal, e.unit, e.value, "
           f"e.evidence_class, e.association_entropy, e.launch, "
           f"{', '.join('e.' + c for c in NESTED_SCOPE)}, e.lineage, "
           f"r.signature, r.timing_clean, r.instrumentation, r.forced_wait, r.run_seq "
           f"FROM evidence AS e JOIN run AS r ON r.run_id = e.run_id "
           f"WHERE {' AND '.join([*where, 'e.value IS NOT NULL'])} "
           f"ORDER BY e.run_id, e.signal, e.launch")
    return _rows(db, sql)


def fetch_rows(db: Connection, region: str, ref: VersionRef,
               signals: list[str] | None = None) -> list[dict[str, Any]]:
    """Evidence rows of ``region`` in one version (and its selected runs), with run facts."""
    where = [f"e.region_id = {lit(region)}", f"e.program_version = {lit(ref.program_version)}"]
    if signals:
        where.append(f"e.signal IN ({', '.join(lit(s) for s in signals)})")
    if ref.runs:
        where.append(f"e.run_id IN ({', '.join(lit(r) for r in ref.runs)})")
    return fetch_where(db, where)


def versions_of_region(db: Connection, region: str) -> list[str]:
    """Program versions with evidence for ``region``, in the order their first run landed."""
    rows = _rows(db, f"SELECT e.program_version, min(r.run_seq) AS first_seq "
                     f"FROM evidence AS e JOIN run AS r ON r.run_id = e.run_id "
                     f"WHERE e.region_id = {lit(region)} GROUP BY e.program_version")
    return [str(r["program_version"]) for r in
            sorted(rows, key=lambda r: (int(r["first_seq"]), str(r["program_version"])))]


def versions_in(rows: list[dict[str, Any]]) -> list[str]:
    """The program versions of rows from :func:`fetch_where`, in the order their first run
    landed (as :func:`versions_of_region` orders them, without another query)."""
    first: dict[str, int] = {}
    for r in rows:
        v, seq = str(r["program_version"]), int(r["run_seq"])
        if seq < first.get(v, seq + 1):
            first[v] = seq
    return sorted(first, key=lambda v: (first[v], v))


def standing(row: dict[str, Any]) -> str:
    """The checker's standing of one evidence row (see the module docstring)."""
    if row["evidence_class"] == "derived":
        return "derived"
    unit = str(row["unit"] or "").lower()
    timing = unit in TIMING_UNITS or "duration" in str(row["signal"])
    if row.get("instrumentation") or row.get("forced_wait") or (
            timing and not row["timing_clean"]):
        return str(row["signature"] or "unknown run")
    return "clean"


def cohorts(rows: list[dict[str, Any]]) -> dict[tuple[str, str, CohortKey], Cohort]:
    """Group rows into cohorts keyed by (version, signal, CohortKey); sum parts, keep repeats."""
    out: dict[tuple[str, str, CohortKey], Cohort] = {}
    keys: dict[tuple[Any, ...], CohortKey] = {}  # rows of one run share their key's inputs
    for r in rows:
        inputs = (r["evidence_class"], r["unit"], r["signal"], r.get("instrumentation"),
                  r.get("forced_wait"), r["timing_clean"], r["signature"],
                  *(r[c] for c in NESTED_SCOPE))
        key = keys.get(inputs)
        if key is None:
            scope = tuple((c, str(r[c])) for c in NESTED_SCOPE if str(r[c]) != "all")
            key = keys[inputs] = CohortKey(standing(r), str(r["evidence_class"]), scope)
        ck = (str(r["program_version"]), str(r["signal"]), key)
        co = out.get(ck)
        if co is None:
            co = out[ck] = Cohort(ck[0], ck[1], key, r["unit"], bool(r["timing_clean"]))
        sample = (str(r["run_id"]), str(r["launch"]))
        v = float(r["value"])
        co.values[sample] = co.values.get(sample, 0.0) + v
        co.tasks.add(str(r["task_id"]))
        co.signatures.add(str(r["signature"]))
        co.entropy_weighted += abs(v) * float(r["association_entropy"] or 0.0)
        co.weight += abs(v)
        # Observed rows' lineage is their artefact row: nothing below reads it.
        lineage = json.loads(r["lineage"]) if isinstance(r.get("lineage"), str) and \
            r["evidence_class"] != "observed" else {}
        cond = (lineage or {}).get("conditions")
        if cond is not None and cond not in co.conditions:
            co.conditions.append(cond)
        # Runs a value rests on besides its own: attribution's mapping runs, a derived value's
        # parent (unperturbed) run.
        for k in ("mapping_run_ids", "parent_run_id"):
            rel = (lineage or {}).get(k)
            co.related_runs.update(str(x) for x in (rel if isinstance(rel, list) else
                                                    [rel] if rel else []))
    return out


def version_cohorts(rows: list[dict[str, Any]],
                    found: dict[tuple[str, str, CohortKey], Cohort],
                    ref: VersionRef) -> dict[tuple[str, str, CohortKey], Cohort]:
    """The cohorts of ``ref``'s version among ``found`` (= ``cohorts(rows)``); for a version
    narrowed to some runs, the cohorts of those runs' rows."""
    if ref.runs:
        runs = set(ref.runs)
        return cohorts([r for r in rows if r["program_version"] == ref.program_version
                        and r["run_id"] in runs])
    return {k: co for k, co in found.items() if k[0] == ref.program_version}
