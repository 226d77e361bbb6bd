"""Selecting the evidence an answer rests on: versions, runs and cohorts of comparable samples.

All evidence is read through the checked query surface (:meth:`argusdb.api.Connection.query`),
so every answer rests on questions the checker accepted; version selectors resolve against the
program versions the checker itself reads (:meth:`argusdb.api.Connection.program_versions`).

A **cohort** is the set of rows of one region, version and signal that can be compared as
repeats of one measurement: same *standing*, same evidence class, same scope (every scope
coordinate except ``launch``) and, for sample counts, the same *sampler* (the collector whose
sampler counted them: Nsight Compute's warp-state samples and Proton's PC samples of one stall
reason are different measurements; the checker's ``AR15 evidence.sampler``). The standing is
the checker's (see ``argusdb/api/metadata.py``): ``clean``, or the run's interference
signature when the measurement perturbs the value (a timing value from a run that is not
``timing_clean``, any value of an instrumented or forced-wait run); ``derived`` for derived
values. Counters from a replayed run are clean: replay re-executes, it does not change what
executes.

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
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa

from argusdb.answers.lineage import lineage_keys
from argusdb.errors import QueryRefused, UsageError
from argusdb.schema.arrowvalues import NULL, indices, numbers, string, strings
from argusdb.schema.shape import INTRA_KERNEL_SCOPE
from argusdb.schema.sqltext import literal as lit
from argusdb.schema.units import SAMPLED_UNITS, TIMING_UNITS

if TYPE_CHECKING:
    from argusdb.api import Connection

#: Scope coordinates that must be equal for two rows to be repeats of one measurement.
NESTED_SCOPE = INTRA_KERNEL_SCOPE


@dataclass(frozen=True)
class VersionRef:
    """A program version as the user named it, optionally narrowed to some of its runs."""

    program_version: str
    label: str
    runs: tuple[str, ...] = ()


@dataclass(frozen=True)
class CohortKey:
    """What two samples must share to be compared: standing, class, scope and sampler."""

    standing: str
    evidence_class: str
    scope: tuple[tuple[str, str], ...] = ()
    #: The collector that sampled the values (sample counts only, else empty).
    sampler: str = ""

    def scope_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.scope) or "per launch"

    def to_json(self) -> dict[str, Any]:
        return {"standing": self.standing, "evidence_class": self.evidence_class,
                "scope": dict(self.scope), "sampler": self.sampler or None}

    def sampler_text(self) -> str:
        """The sampler in words (empty for values no sampler counted)."""
        return sampler_words(self.sampler)


#: How each collector's samples are named in answers.
SAMPLER_WORDS = {"ncu": "ncu warp-state samples", "proton": "Proton PC samples"}


def sampler_words(sampler: str) -> str:
    """A cohort's sampler in words: ``ncu warp-state samples``; empty when it has none."""
    return SAMPLER_WORDS.get(sampler, f"{sampler} samples") if sampler else ""


class Columnwise(NamedTuple):
    """A cohort's samples, runs and per-run medians as :func:`cohorts` computes them from an
    Arrow table (what :class:`Cohort` would compute from its :attr:`~Cohort.values`)."""

    #: The samples in (run, launch) order.
    samples: list[float]
    #: The distinct runs, sorted.
    runs: list[str]
    #: The median of each run's samples, in run order.
    run_medians: list[float]
    #: Makes the samples' (run, launch) keys, in order (:attr:`Cohort.values` calls it when
    #: first read: a diff reads none of them).
    keys: Callable[[], list[tuple[str, str]]] | None = None


@dataclass
class Cohort:
    """Comparable samples of one region, version and signal."""

    program_version: str
    signal: str
    key: CohortKey
    unit: str | None = None
    timing_clean: bool = True
    tasks: set[str] = field(default_factory=set)
    signatures: set[str] = field(default_factory=set)
    entropy_weighted: float = 0.0
    weight: float = 0.0
    conditions: list[Any] = field(default_factory=list)
    related_runs: set[str] = field(default_factory=set)
    #: :attr:`samples`, :attr:`runs` and :meth:`run_medians` as :func:`cohorts` computed them
    #: column-wise; a cohort whose samples were added to since is computed afresh from
    #: :attr:`values`.
    columnwise: Columnwise | None = field(default=None, repr=False, compare=False)
    #: :attr:`values`; None until a cohort grouped column-wise is asked for them.
    _values: dict[tuple[str, str], float] | None = field(default_factory=dict, init=False,
                                                         repr=False)

    @property
    def values(self) -> dict[tuple[str, str], float]:
        """Each sample's value by (run, launch); parts of a sample are summed in it. A cohort
        grouped column-wise makes it when it is first read."""
        if self._values is None:
            kept = self.columnwise
            assert kept is not None and kept.keys is not None
            self._values = dict(zip(kept.keys(), kept.samples, strict=True))
        return self._values

    def _kept(self) -> Columnwise | None:
        kept = self.columnwise
        if kept is None or self._values is None:  # values not made: nothing added to them
            return kept
        return kept if len(kept.samples) == len(self._values) else None

    @property
    def samples(self) -> list[float]:
        """The samples in (run, launch) order."""
        kept = self._kept()
        return list(kept.samples) if kept else [self.values[k] for k in sorted(self.values)]

    @property
    def signature(self) -> str:
        """The interference signatures of the cohort's runs ('; '-joined)."""
        return "; ".join(sorted(self.signatures))

    @property
    def runs(self) -> list[str]:
        kept = self._kept()
        return list(kept.runs) if kept else sorted({r for r, _ in self.values})

    def run_medians(self) -> list[float]:
        """The median of each run's samples (``np.median``'s value: the middle one, or the
        mean of the two middle ones), in run order."""
        kept = self._kept()
        if kept:
            return list(kept.run_medians)
        per_run: dict[str, list[float]] = {}  # a median does not depend on its input's order
        for (run, _), v in self.values.items():
            per_run.setdefault(run, []).append(v)
        median = np.median if any(map(math.isnan, self.values.values())) else statistics.median
        return [float(median(per_run[r])) for r in sorted(per_run)]

    @property
    def association_entropy(self) -> float:
        """Value-weighted association entropy (bits) of the rows that went in."""
        return self.entropy_weighted / self.weight if self.weight else 0.0


def _rows(db: Connection, sql: str) -> list[dict[str, Any]]:
    return _dicts(db.query(sql))


def resolve_version(db: Connection, text: str, region: str | None = None) -> VersionRef:
    """Resolve a version selector to one program version.

    ``text`` is a program version ID or a unique prefix of one (>= 4 chars); a run ID or prefix
    (that run's version, narrowed to that run); or ``KEY=VALUE[,KEY=VALUE]`` matched against the
    versions' ``--option`` values (restricted to the program of ``region`` when given). Variants
    share their parent's options: ``KEY=VALUE`` names the original, ``transform=T`` a variant.

    Raises:
        UsageError: nothing or more than one version matches.
    """
    return resolve_versions(db, [text], region)[0]


def resolve_versions(db: Connection, texts: list[str], region: str | None = None
                     ) -> list[VersionRef]:
    """:func:`resolve_version` of several selectors, reading the program versions once (per
    store write generation: :meth:`~argusdb.api.Connection.program_versions`)."""
    versions = db.program_versions()
    return [_resolve(db, t, region, versions) for t in texts]


def _resolve(db: Connection, text: str, region: str | None,
             versions: list[dict[str, Any]]) -> VersionRef:
    t = text.strip()
    program = region.split("/", 1)[0] if region else None
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
        raise UsageError(f"version {t!r} is too short to select a version",
                         "give at least 4 characters of a program version or run ID, or "
                         "KEY=VALUE of its --option values")
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
    def named(vs: list[dict[str, Any]]) -> str:
        out = "; ".join(v["program_version"] + "".join(
            f" {k}={x}" for k, x in json.loads(v["options"] or "{}").items())
            + (f" ({str(v['transform']).split(':', 1)[0]} variant)" if v["transform"] else "")
            for v in vs[:6])
        return out + (f"; and {len(vs) - 6} more" if len(vs) > 6 else "")

    if not hits:
        raise UsageError(f"version {text!r} matches no program version of this store",
                         f"name one by ID prefix, run ID or KEY=VALUE of its --option values "
                         f"('argus runs' lists them): {named(versions) or 'none'}")
    raise UsageError(f"version {text!r} matches {len(hits)} program versions",
                     f"name one by ID or add KEY=VALUE pairs: {named(hits)}")


#: The order of :func:`fetch_table`'s rows.
_ORDER = ("run_id", "signal", "launch")
#: The evidence columns of :func:`fetch_table`'s rows, then its runs' facts.
_ROW_COLUMNS = (
    "e.program_version, e.run_id, e.task_id, e.signal, e.unit, e.value, e.evidence_class, "
    f"e.association_entropy, e.launch, {', '.join('e.' + c for c in NESTED_SCOPE)}")
_EVIDENCE_COLUMNS = (f"{_ROW_COLUMNS}, CASE WHEN e.evidence_class = 'observed' THEN NULL "
                     "ELSE e.lineage END AS lineage")
_RUN_COLUMNS = ("signature", "timing_clean", "instrumentation", "forced_wait", "run_seq",
                "collector")
_PLAN_COLUMNS = ("plan_id", "plan_region_id", "plan_signals", "plan_scope")
#: Every run's facts and its task's plan (a question over facts only: the connection keeps
#: its answer per store generation, :meth:`~argusdb.api.Connection.facts`). The planned
#: tasks are joined first: both keys are primary keys, so these are the rows of run LEFT JOIN
#: task LEFT JOIN plan.
_RUN_FACTS = (f"SELECT r.run_id, {', '.join('r.' + c for c in _RUN_COLUMNS)}, "
              f"{', '.join('p.' + c for c in _PLAN_COLUMNS)} FROM run AS r "
              "LEFT JOIN (SELECT t.task_id, p.plan_id, p.region_id AS plan_region_id, "
              "p.signals AS plan_signals, p.scope AS plan_scope FROM task AS t "
              "JOIN plan AS p ON p.plan_id = t.plan_id) AS p ON p.task_id = r.task_id")


def fetch_table(db: Connection, where: list[str], plans: bool = False) -> pa.Table:
    """Evidence rows (with their runs' facts) matching SQL predicates over ``e`` (evidence) and
    ``r`` (run), as an Arrow table in the shape :func:`cohorts` reads; rows without a value
    are left out. The predicates are the caller's SQL.

    The predicates name metadata columns only (the NULL values are dropped here, not by an
    ``e.value IS NOT NULL`` in SQL), so the checker judges the question from its metadata
    summary rather than a second scan of the evidence. Observed rows' lineage (their
    artefact row, which nothing here reads) is not built. With ``plans``, each row also
    carries the measurement plan of its run's task, if any (``plan_id``, ``plan_region_id``,
    ``plan_signals``, ``plan_scope``: what :class:`~argusdb.answers.sufficiency.Coverage`
    reads).

    The runs' facts are joined here, from :data:`_RUN_FACTS` (one row per run, kept by the
    connection per store generation), rather than by the evidence question: a join in that
    question cost about a third of it. Predicates over ``r`` keep the join in SQL.
    """
    return fetch_tables(db, where, plans)[0]


def fetch_tables(db: Connection, where: list[str], plans: bool = False,
                 also: Sequence[str] = ()) -> tuple[pa.Table, list[pa.Table]]:
    """:func:`fetch_table`, and the answers to the independent questions ``also``, their
    statements run at the same time as the rows' (:meth:`~argusdb.api.Connection.queries`).
    """
    import pyarrow.compute as pc

    cond = " AND ".join(where)
    if re.search(r"\br\.", cond):  # a predicate over the run: joined in SQL
        cols = ", ".join(f"f.{c}" for c in _RUN_COLUMNS + _PLAN_COLUMNS)
        table, *others = db.queries([
            f"SELECT {_EVIDENCE_COLUMNS}, {cols} FROM evidence AS e "
            f"JOIN run AS r ON r.run_id = e.run_id "
            f"JOIN ({_RUN_FACTS}) AS f ON f.run_id = e.run_id WHERE {cond}", *also])
    else:
        # the runs' facts first: asked beside the rows (a connection's first question) they
        # cost more CPU under load (125-145 ms against 105-115 ms per first diff at load 10)
        facts = db.facts(_RUN_FACTS)
        table, *others = db.queries([
            f"SELECT {_ROW_COLUMNS}, e.evidence_id FROM evidence AS e WHERE {cond}", *also])
        table = _with_lineage(db, table, cond)
        at = pc.index_in(table.column("run_id"), value_set=facts.column("run_id"))
        keep = pc.and_(pc.is_valid(at), pc.is_valid(table.column("value")))
        if at.null_count or table.column("value").null_count:
            # evidence of a run the store does not hold: not joined, as in SQL
            table, at = table.filter(keep), at.filter(keep)
        # sorted before the facts are joined: fewer columns to reorder
        order = _order(table)
        table, at = table.take(order), at.take(order)
        joined = facts.select(list(_RUN_COLUMNS + (_PLAN_COLUMNS if plans else ()))).take(at)
        for c in joined.column_names:
            table = table.append_column(c, joined.column(c))
        return table, others
    if not plans:
        table = table.drop_columns(list(_PLAN_COLUMNS))
    if table.column("value").null_count:
        table = table.filter(pc.is_valid(table.column("value")))
    return table.take(_order(table)), others


def _with_lineage(db: Connection, table: pa.Table, cond: str) -> pa.Table:
    """``table`` (rows of :data:`_ROW_COLUMNS` and their ``evidence_id``) with the lineage of
    its attributed and derived rows in place of the ids, as :data:`_EVIDENCE_COLUMNS` gives
    it. The lineage is asked for only where such rows are: the ``evidence`` view builds every
    observed row's lineage (its artefact row) as JSON before a ``CASE`` can drop it, ~2 ms
    CPU of the ~8 ms a diff's 5,400 timing rows take. Joined by evidence id; where the ids
    asked do not match the rows one to one, the rows are asked again with their lineage."""
    import pyarrow.compute as pc

    other = pc.not_equal(table.column("evidence_class"), string("observed"))
    lineage: pa.Array | pa.ChunkedArray = pa.nulls(table.num_rows, pa.string())
    if pc.any(other).as_py():
        whole = f"SELECT {_EVIDENCE_COLUMNS} FROM evidence AS e WHERE {cond}"
        try:
            asked = db.query(f"SELECT e.evidence_id, e.lineage FROM evidence AS e "
                             f"WHERE {cond} AND e.evidence_class <> 'observed'")
        except QueryRefused:  # judged apart from the rows: ask as before
            return db.query(whole)
        ids = asked.column("evidence_id")
        at = pc.index_in(table.column("evidence_id"), value_set=ids)
        if pc.count_distinct(ids).as_py() != asked.num_rows or pc.any(
                pc.and_(other, pc.is_null(at))).as_py():
            return db.query(whole)
        lineage = pc.if_else(other, asked.column("lineage").take(at), NULL)
    return table.drop_columns(["evidence_id"]).append_column(
        pa.field("lineage", pa.string()), lineage)


def _order(table: pa.Table) -> pa.Array:
    """Indices that sort ``table`` by :data:`_ORDER`: ordered here rather than by the SQL
    (DuckDB's sort of the wide rows cost as much as the rest of the question); Arrow's sort
    is stable, nulls last as DuckDB's ORDER BY."""
    import pyarrow.compute as pc

    return pc.sort_indices(table, [(c, "ascending") for c in _ORDER])


def fetch_where(db: Connection, where: list[str]) -> list[dict[str, Any]]:
    """:func:`fetch_table`'s rows as dicts."""
    return _dicts(fetch_table(db, where))


def _dicts(table: pa.Table) -> list[dict[str, Any]]:
    names = table.column_names  # column by column: Arrow's row-wise to_pylist is 3x slower
    return [dict(zip(names, vals, strict=True))
            for vals in zip(*(c.to_pylist() for c in table.columns), strict=True)]


def fetch_rows(db: Connection, region: str, ref: VersionRef,
               signals: list[str] | None = None) -> pa.Table:
    """Evidence rows of ``region`` in one version (and its selected runs), with run facts."""
    where = [f"e.region_id = {lit(region)}", f"e.program_version = {lit(ref.program_version)}"]
    if signals:
        where.append(f"e.signal IN ({', '.join(lit(s) for s in signals)})")
    if ref.runs:
        where.append(f"e.run_id IN ({', '.join(lit(r) for r in ref.runs)})")
    return fetch_table(db, where)


def versions_of_region(db: Connection, region: str) -> list[str]:
    """Program versions with evidence for ``region``, in the order their first run landed."""
    rows = _rows(db, f"SELECT e.program_version, min(r.run_seq) AS first_seq "
                     f"FROM evidence AS e JOIN run AS r ON r.run_id = e.run_id "
                     f"WHERE e.region_id = {lit(region)} GROUP BY e.program_version")
    return [str(r["program_version"]) for r in
            sorted(rows, key=lambda r: (int(r["first_seq"]), str(r["program_version"])))]


def versions_in(rows: list[dict[str, Any]] | pa.Table) -> list[str]:
    """The program versions of rows from :func:`fetch_table`, in the order their first run
    landed (as :func:`versions_of_region` orders them, without another query)."""
    first: dict[str, int] = {}
    if isinstance(rows, pa.Table) and rows.num_rows:
        codes, names = _codes(rows.column("program_version"))
        seqs = np.asarray(numbers(rows.column("run_seq")), dtype=np.int64)
        order = np.lexsort((seqs, codes))  # by version, then run_seq: each version's first
        starts = np.flatnonzero(np.diff(codes[order], prepend=-1))
        first = {str(names[int(codes[order[i]])]): int(seqs[order[i]]) for i in starts}
    for r in rows if not isinstance(rows, pa.Table) else ():
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


def cohorts(rows: list[dict[str, Any]] | pa.Table
            ) -> dict[tuple[str, str, CohortKey], Cohort]:
    """Group rows into cohorts keyed by (version, signal, CohortKey); sum parts, keep repeats.

    ``rows`` is :func:`fetch_table`'s Arrow table (grouped column-wise: NumPy sums the parts
    of a sample in row order, as a loop would) or its rows as dicts.
    """
    if isinstance(rows, pa.Table):
        return _cohorts_of_table(rows)
    out: dict[tuple[str, str, CohortKey], Cohort] = {}
    keys: dict[tuple[Any, ...], CohortKey] = {}  # rows of one run share their key's inputs
    lineages: dict[str, dict[str, Any]] = {}
    for r in rows:
        inputs = (r["evidence_class"], r["unit"], r["signal"], r.get("instrumentation"),
                  r.get("forced_wait"), r["timing_clean"], r["signature"], r.get("collector"),
                  *(r[c] for c in NESTED_SCOPE))
        key = keys.get(inputs)
        if key is None:
            key = keys[inputs] = _cohort_key(r)
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
        if r["evidence_class"] != "observed":
            _add_lineage(co, r.get("lineage"), lineages)
    return out


def _cohort_key(r: dict[str, Any]) -> CohortKey:
    scope = tuple((c, str(r[c])) for c in NESTED_SCOPE if str(r[c]) != "all")
    sampler = str(r.get("collector") or "") if r["unit"] in SAMPLED_UNITS else ""
    return CohortKey(standing(r), str(r["evidence_class"]), scope, sampler)


def _add_lineage(co: Cohort, text: Any, parsed: dict[str, dict[str, Any]]) -> None:
    """What a row's lineage adds to its cohort: derived conditions, related runs.

    Observed rows' lineage is their artefact row: nothing below reads it, so callers pass
    only attributed and derived rows' lineage.
    """
    if not isinstance(text, str):
        return
    lineage = parsed.get(text)
    if lineage is None:
        lineage = parsed[text] = lineage_keys(text)
    cond = lineage.get("conditions")
    if cond is not None and cond not in co.conditions:
        co.conditions.append(cond)
    # Runs a value rests on besides its own: attribution's mapping runs, a derived value's
    # parent (unperturbed) run.
    for k in ("mapping_run_ids", "parent_run_id"):
        rel = lineage.get(k)
        co.related_runs.update(str(x) for x in (rel if isinstance(rel, list) else
                                                [rel] if rel else []))


#: Columns whose values decide a row's cohort key (see :func:`cohorts`).
_KEY_INPUTS = ("program_version", "signal", "evidence_class", "unit", "instrumentation",
               "forced_wait", "timing_clean", "signature", "collector", *NESTED_SCOPE)


def _codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[Any]]:
    """Dictionary codes of a column (NULL has its own code) and the values they stand for."""
    import pyarrow.compute as pc

    if len(col) and not col.null_count and pc.all(pc.equal(col, col[0])).as_py():
        # one value (a scope coordinate 'all', one class, one unit): no hash table to build
        return np.zeros(len(col), dtype=np.int64), [col[0].as_py()]
    enc = pc.dictionary_encode(col, null_encoding="encode")
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
        if isinstance(enc, pa.ChunkedArray):  # pragma: no cover - older pyarrow
            enc = enc.chunk(0)
    return (np.asarray(numbers(enc.indices), dtype=np.int64),
            enc.dictionary.to_pylist())


def _group(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of integer code columns (sorted), each row's index among them and the
    first row of each: one
    combined int64 key per row, the columns as the digits of a mixed-radix number (made dense
    only where the next digit would overflow it), then one ``np.unique`` (NumPy's
    ``unique(axis=0)`` sorts rows as structured values, ~30x slower)."""
    key = np.zeros(columns[0].size, dtype=np.int64)
    span = 1  # key < span
    for col in columns:
        width = int(col.max()) + 1
        if span * width >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.ravel().astype(np.int64)
            span = int(key.max()) + 1
        key = key * width + col
        span *= width
    # the first row of each distinct key (np.unique sorts stably for return_index)
    _, first, key = np.unique(key, return_index=True, return_inverse=True)
    return np.stack([c[first] for c in columns], axis=1), key.ravel().astype(np.int64), first


def _text_codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[str]]:
    """:func:`_codes` of a column's values as text (``str``), numbered in sorted order."""
    codes, values = _codes(col)
    text = [str(v) for v in values]
    order = sorted(range(len(text)), key=text.__getitem__)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes], [text[i] for i in order]


def _run_medians(samples: np.ndarray, sums: np.ndarray, run_names: list[str]
                 ) -> dict[int, tuple[list[str], list[float]]]:
    """Each cohort's runs and the median of each run's samples, from the grouped samples of
    :func:`_cohorts_of_table` (rows of cohort, run code, launch code; run codes in the order
    of ``run_names``) and their sums: what :meth:`Cohort.run_medians` computes one run at a
    time (``np.median``'s value: the middle sample or the mean of the two middle ones, NaN
    where a sample is NaN), for every run of every cohort in one sort."""
    width = int(samples[:, 1].max()) + 1
    group = samples[:, 0] * width + samples[:, 1]
    order = np.lexsort((sums, group))  # by (cohort, run), then value (NaN last)
    v, g = sums[order], group[order]
    starts = np.flatnonzero(np.diff(g, prepend=-1))
    n = np.diff(np.append(starts, g.size))
    lo, hi = starts + (n - 1) // 2, starts + n // 2
    with np.errstate(over="ignore", invalid="ignore"):
        med = np.where(lo == hi, v[lo], (v[lo] + v[hi]) / 2)
    med[np.add.reduceat(np.isnan(v), starts) > 0] = np.nan
    out: dict[int, tuple[list[str], list[float]]] = {}
    for key, m in zip(g[starts].tolist(), med.tolist(), strict=True):  # in (cohort, run) order
        runs, medians = out.setdefault(key // width, ([], []))
        runs.append(run_names[key % width])
        medians.append(m)
    return out


def _sample_keys(runs: list[str], launches: list[str], codes: np.ndarray
                 ) -> list[tuple[str, str]]:
    """The (run, launch) keys of samples given as rows of (run code, launch code)."""
    return [(runs[r], launches[n]) for r, n in codes.tolist()]


def _cohorts_of_table(t: pa.Table) -> dict[tuple[str, str, CohortKey], Cohort]:
    out: dict[tuple[str, str, CohortKey], Cohort] = {}
    if t.num_rows == 0:
        return out
    names = set(t.column_names)
    enc = {c: _codes(t.column(c)) for c in _KEY_INPUTS if c in names}
    combos, combo_of, first_row = _group([enc[c][0] for c in enc])
    # one cohort per distinct (version, signal, key): several input combinations may share it
    cohort_of_combo = np.empty(len(combos), dtype=np.int64)
    found: list[Cohort] = []
    index: dict[tuple[str, str, CohortKey], int] = {}
    for i, combo in enumerate(combos):
        r = {c: enc[c][1][int(code)] for c, code in zip(enc, combo, strict=True)}
        ck = (str(r["program_version"]), str(r["signal"]), _cohort_key(r))
        if ck not in index:
            index[ck] = len(found)
            found.append(Cohort(ck[0], ck[1], ck[2], r.get("unit"),
                                bool(r.get("timing_clean"))))
        cohort_of_combo[i] = index[ck]
    row_cohort = cohort_of_combo[combo_of]
    # the first row of a cohort names its unit and timing_clean, as in the row loop
    firsts: dict[int, int] = {}
    for i in np.argsort(first_row, kind="stable"):
        firsts.setdefault(int(cohort_of_combo[i]), int(i))
    for c, i in firsts.items():
        r = {k: enc[k][1][int(code)] for k, code in zip(enc, combos[i], strict=True)}
        found[c].unit, found[c].timing_clean = r.get("unit"), bool(r.get("timing_clean"))
    value = np.asarray(numbers(t.column("value")), dtype=float)
    weight = np.abs(value)
    ent = numbers(t.column("association_entropy"), fill=0.0)
    n_co = len(found)
    # samples: (cohort, run, launch); parts summed in row order
    # runs and launches coded in the order of their text: the samples, sorted by cohort,
    # run and launch, are each cohort's in (run, launch) order
    run_codes, run_names = _text_codes(t.column("run_id"))
    launch_codes, launch_names = _text_codes(t.column("launch"))
    samples, sample_of, _ = _group([row_cohort, run_codes, launch_codes])
    sums = np.bincount(sample_of, weights=value, minlength=len(samples))
    # each cohort's samples are a run of consecutive rows of ``samples`` (sorted by cohort)
    sample_sums = sums.tolist()
    starts = np.flatnonzero(np.diff(samples[:, 0], prepend=-1)).tolist()
    by_run = _run_medians(samples, sums, run_names)
    for lo, hi in zip(starts, [*starts[1:], len(samples)], strict=True):
        c = int(samples[lo, 0])
        found[c]._values = None  # made from the keys when read
        found[c].columnwise = Columnwise(
            sample_sums[lo:hi], *by_run[c],
            partial(_sample_keys, run_names, launch_names, samples[lo:hi, 1:]))
    ew = np.bincount(row_cohort, weights=weight * ent.astype(float), minlength=n_co)
    w = np.bincount(row_cohort, weights=weight, minlength=n_co)
    for name, attr in (("task_id", "tasks"), ("signature", "signatures")):
        codes, vals = enc[name] if name in enc else _codes(t.column(name))
        for c, k in _group([row_cohort, codes])[0].tolist():
            getattr(found[c], attr).add(str(vals[k]))
    lineages: dict[str, dict[str, Any]] = {}
    cls_codes, cls_names = enc["evidence_class"]
    not_observed = np.flatnonzero(cls_codes != (cls_names.index("observed")
                                                if "observed" in cls_names else -1))
    if not_observed.size:
        texts = t.column("lineage").take(indices(not_observed)).to_pylist()
        for i, text in zip(not_observed.tolist(), texts, strict=True):
            _add_lineage(found[int(row_cohort[i])], text, lineages)
    for c, co in enumerate(found):
        co.entropy_weighted, co.weight = float(ew[c]), float(w[c])
    return {(found[c].program_version, found[c].signal, found[c].key): found[c]
            for c in firsts}  # in the order of their first rows, as the row loop makes them


def version_cohorts(rows: list[dict[str, Any]] | pa.Table,
                    found: dict[tuple[str, str, CohortKey], Cohort],
                    ref: VersionRef) -> dict[tuple[str, str, CohortKey], Cohort]:
    """The cohorts of ``ref``'s version among ``found`` (= ``cohorts(rows)``); for a version
    narrowed to some runs, the cohorts of those runs' rows."""
    if ref.runs:
        if isinstance(rows, pa.Table):
            import pyarrow.compute as pc

            return cohorts(rows.filter(pc.and_(
                pc.equal(rows.column("program_version"), string(ref.program_version)),
                pc.is_in(rows.column("run_id"), strings(list(ref.runs))))))
        runs = set(ref.runs)
        return cohorts([r for r in rows if r["program_version"] == ref.program_version
                        and r["run_id"] in runs])
    return {k: co for k, co in found.items() if k[0] == ref.program_version}
