"""The checker's metadata from a DuckDB store: the :class:`~argusdb.checker.metadata.Metadata`
Protocol implemented over :class:`~argusdb.store.embedded.Store` (beside it, as the runner's
backends sit
beside the runner).

A static check cannot tell which program versions ``WHERE region_id = 'softmax/softmax_fwd'``
selects; the store can. For every evidence-bearing FROM item the checker asks for the metadata
rows the query's own simple predicates select, e.g.::

    SELECT program_version, evidence_class, _standing, replay_pass, ..., <run sample>
    FROM <evidence metadata> WHERE region_id = 'softmax/softmax_fwd' GROUP BY ALL

grouped to what the rules compare and the query's keys, runs and tasks as samples (see
:mod:`argusdb.checker.metadata`): a few hundred rows however many runs match. It reads a
summary of the relation (one row per program version, run, task, region, kernel, signal, unit,
class, replay pass, warp role, granularity and scope level, with run columns joined in).
Writers keep the summary in the store (``_argus_meta_<relation>``, stamped with a fingerprint
of the data) through :func:`refresh`, incrementally: after an ingest only the new runs' rows
(and the attributed/derived rows of their versions) are summarised again. A check never writes:
a connection that finds the stored summary stale builds a TEMP copy (memory only) for itself.
Predicates or keys on columns the summary lacks (``value``, ``launch``, ``pc`` ...) run against
the relation itself: exact, only slower.

Example:
    >>> from argusdb.checker.predicates import Pred
    >>> pred = Pred(sqlglot.parse_one("signal = 'duration'"), ["signal"])
    >>> with open_store("argus.duckdb", read_only=True) as store:
    ...     rows = StoreMetadata.of(store).rows("evidence", [pred], [], {"signal"})
    >>> "ee0369be2e320607" in {r["program_version"] for r in rows}
    True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from argusdb.checker.metadata import (
    ID_SAMPLE,
    META_COLUMNS,
    RULE_COLUMNS,
    group_rows,
)
from argusdb.errors import QueryFailed
from argusdb.schema import catalog
from argusdb.schema.shape import INTRA_KERNEL_SCOPE
from argusdb.schema.sqltext import literal as _lit
from argusdb.schema.sqltext import literal_list
from argusdb.schema.units import SAMPLED_UNITS, TIMING_UNITS
from argusdb.store.embedded import Store

if TYPE_CHECKING:
    from argusdb.checker.predicates import Pred

#: Evidence columns the summary keeps (low cardinality); run columns are added to them.
SUMMARY_EVIDENCE_COLUMNS = ("program_version", "task_id", "run_id", "region_id", "kernel",
                            "signal", "unit", "evidence_class", "replay_pass", "warp_role",
                            "source_file", "scope_path")
#: Columns a relation's summary keeps besides those (what checks of its constructs filter on:
#: the interval algebra selects intervals by kind or role, per clock domain).
SUMMARY_EXTRA_COLUMNS = {"interval_event": ("kind", "role", "domain")}
#: Most metadata rows read per FROM item; beyond it the answer is truncated (and says so).
MAX_META_ROWS = 200_000
#: Largest summary filtered in Python rather than by a query (a round trip costs more).
PYTHON_FILTER_MAX_ROWS = 5000
#: Most values of an IN (subquery) turned into a literal list for the metadata query.
MAX_SEMI_JOIN_VALUES = 10_000
_SCOPE_COORDS = INTRA_KERNEL_SCOPE  # order of _scope labels


def _filled(relation: str, cols: set[str]) -> list[str]:
    """Select items giving every metadata column of ``relation`` (defaults where it lacks one;
    program version and task come from the run when the relation has none). ``cols`` are
    the relation's columns as the store has them (an older store may lack newer ones)."""
    sel = [f"x.{c}" for c in sorted(cols)]
    if "run_id" not in cols:
        sel.append("NULL::VARCHAR AS run_id")
    for c, default in (("program_version", "r.program_version"), ("task_id", "r.task_id"),
                       ("evidence_class", "'observed'"), ("replay_pass", "NULL::INTEGER"),
                       ("region_id", "NULL::VARCHAR"), ("kernel", "NULL::VARCHAR"),
                       ("source_file", "NULL::VARCHAR"), ("scope_path", "NULL::VARCHAR")):
        if c not in cols:
            sel.append(f"{default} AS {c}")
    if "signal" not in cols:
        sel += ["'dur_ns' AS signal"] if "dur_ns" in cols else ["NULL::VARCHAR AS signal"]
    if "unit" not in cols:
        sel += ["'ns' AS unit"] if "dur_ns" in cols and "signal" not in cols else \
            ["NULL::VARCHAR AS unit"]
    # per instruction, per source line, or a total (the class says region or kernel later)
    pc = "x.pc IS NOT NULL" if "pc" in cols else "false"
    line = "x.source_line IS NOT NULL" if "source_line" in cols else "false"
    sel.append(f"CASE WHEN {pc} THEN 'instruction' WHEN {line} THEN 'line' END AS _index_level")
    sel += [f"'all' AS {c}" for c in _SCOPE_COORDS if c not in cols]
    path = "x.scope_path" if "scope_path" in cols else "NULL::VARCHAR"
    kernel = "x.kernel" if "kernel" in cols else "NULL::VARCHAR"
    # A scope-tree path below the kernel (Proton 'k2/load') is a slice of it; a path with no
    # kernel is a tool scope above kernels. The test of ingest's region binding (the macro
    # kernel_wide_path of argusdb/queries/shape.sql).
    # the clock domain of raw and aligned timestamps (interval_event says it; other relations
    # with timestamps are on their run's clock)
    if "clock_domain" in cols:
        sel += ["x.clock_domain AS _clock", "x.aligned_domain AS _aligned_clock"]
    elif "start_ns" in cols and "run_id" in cols:
        family = ("CASE WHEN x.clock IN ('cuda_event', 'scope') THEN x.clock ELSE 'trace' END"
                  if "clock" in cols else "'trace'")
        sel += [f"concat({family}, ' clock of run ', x.run_id) AS _clock",
                "NULL::VARCHAR AS _aligned_clock"]
    else:
        sel += ["NULL::VARCHAR AS _clock", "NULL::VARCHAR AS _aligned_clock"]
    sel.append(f"CASE WHEN kernel_wide_path({path}, {kernel}) THEN NULL "
               f"WHEN {kernel} IS NULL THEN 'tool_scope' ELSE 'in_kernel_scope' END "
               f"AS _path_level")
    return sel


def _derived(inner: str, run_columns: set[str]) -> str:
    """Add run columns, ``_scope`` and ``_standing`` to rows of ``inner`` (has run_id)."""
    run_cols = [c for c in sorted(run_columns)
                if c not in ("program_version", "task_id", "run_id")]
    scope = ", ".join(f"CASE WHEN {c} <> 'all' THEN '{c}' END" for c in _SCOPE_COORDS)
    timing = literal_list(TIMING_UNITS)
    sampler = (f"CASE WHEN unit IN ({literal_list(SAMPLED_UNITS)}) THEN collector END"
               if "collector" in run_columns else "NULL::VARCHAR")
    return f"""
        SELECT * REPLACE (coalesce(unit, '(none)') AS unit),
               coalesce(nullif(concat_ws(',', {scope}, _path_level), ''), 'kernel')
                  AS _scope,
               CASE WHEN evidence_class = 'attributed' THEN 'region'
                    ELSE coalesce(_index_level, 'kernel') END AS _granularity,
               CASE WHEN evidence_class = 'derived' THEN NULL
                    WHEN coalesce(instrumentation, false) OR coalesce(forced_wait, false)
                         OR ((lower(unit) IN ({timing}) OR signal LIKE '%duration%')
                             AND NOT coalesce(timing_clean, false))
                    THEN coalesce(signature, 'unknown run')
                    ELSE 'clean' END AS _standing,
               {sampler} AS _sampler
        FROM (SELECT m.*, {', '.join(f'r.{c}' for c in run_cols)}
              FROM ({inner}) AS m LEFT JOIN run AS r ON r.run_id = m.run_id)"""


def _run_join(cols: set[str]) -> str:
    return "LEFT JOIN run AS r ON r.run_id = x.run_id" if "run_id" in cols else \
        "LEFT JOIN run AS r ON false"


def _source_sql(relation: str, cols: set[str], run_cols: set[str]) -> str:
    """Every row of ``relation`` with the metadata columns (the exact, slow path)."""
    return _derived(f"SELECT {', '.join(_filled(relation, cols))} FROM {relation} AS x "
                    f"{_run_join(cols)}", run_cols)


def _summary_sql(relation: str, cols: set[str], run_cols: set[str], where: str = "true"
                 ) -> str:
    """``relation`` grouped down to the summary columns first, run columns joined after:
    one pass over the rows (those ``where`` selects), the joins and CASEs only over groups."""
    keep = [c for c in SUMMARY_EVIDENCE_COLUMNS if c != "warp_role"] + list(
        SUMMARY_EXTRA_COLUMNS.get(relation, ()))
    coords = [f"{c} <> 'all' AS _not_all_{c}" for c in _SCOPE_COORDS if c != "warp_role"]
    grouped = (f"SELECT {', '.join(keep)}, warp_role, _path_level, _index_level, _clock, "
               f"_aligned_clock, "
               f"{', '.join(coords)}, "
               f"count(*) AS _rows "
               f"FROM (SELECT {', '.join(_filled(relation, cols))} FROM {relation} AS x "
               f"{_run_join(cols)}) WHERE {where} GROUP BY ALL")
    flags = [f"_not_all_{c}" for c in _SCOPE_COORDS if c != "warp_role"]
    unflag = ", ".join(f"CASE WHEN _not_all_{c} THEN '*' ELSE 'all' END AS {c}"
                       for c in _SCOPE_COORDS if c != "warp_role")
    return _derived(f"SELECT * EXCLUDE ({', '.join(flags)}), {unflag} FROM ({grouped})",
                    run_cols)


@cache
def _modules_digest() -> str:
    """Digest of the SQL modules (tables, views, macros) of this code: a summary built by
    other code (other columns) is never reused."""
    h = hashlib.sha256(",".join(META_COLUMNS).encode())  # the columns a summary holds
    for m in catalog.schema_modules() + catalog.query_modules():
        h.update(m.text.encode())
    return h.hexdigest()[:16]


def _filter(rows: list[dict[str, Any]], preds: list[Pred], keys: list[Pred]
            ) -> list[dict[str, Any]]:
    from argusdb.checker.predicates import evaluate

    out = []
    for r in rows:
        if all(evaluate(p, r) is True for p in preds):
            d = {f"_k{i}": evaluate(k, r) for i, k in enumerate(keys)}
            d.update((c, r[c]) for c in META_COLUMNS)
            d["_rows"] = r["_rows"]
            out.append(d)
    return group_rows(out)


def _grouped_select(keys: list[Pred]) -> str:
    """Select list of metadata rows grouped to the rules' columns and the query's keys, with
    the run and task samples of :mod:`argusdb.checker.metadata` (``id_sample`` in SQL: no
    DISTINCT aggregate, which costs seconds over a big summary); ``GROUP BY ALL`` groups it."""
    ids = []
    for c in ("run", "task"):
        small, top = f"min({c}_id, {ID_SAMPLE})", f"max({c}_id)"
        ids += [f"list_sort(list_distinct(list_filter(list_append({small}, {top}), "
                f"x -> x IS NOT NULL))) AS _{c}s",
                f"coalesce(list_contains({small}, {top}), true) AS _{c}s_complete"]
    return ", ".join([f"{k.sql()} AS _k{i}" for i, k in enumerate(keys)] + list(RULE_COLUMNS)
                     + ids)


class StoreMetadata:
    """The :class:`~argusdb.checker.metadata.Metadata` of one open store (one per Store
    object, kept on it: :meth:`of`), with the per-connection summaries its queries use."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # Metadata queries carry the query's own expressions: lock the engine down first.
        store.lock_down()
        # TEMP tables belong to one DuckDB session: summaries and their readers share this one.
        self.cur = store.cursor()
        self._summaries: dict[str, tuple[int, str, frozenset[str]]] = {}
        self._py: dict[str, tuple[int, list[dict[str, Any]] | None]] = {}
        self._asks: dict[tuple[str, int], int] = {}
        #: Values of IN (subquery) filters, per store generation (the data cannot change
        #: under the same generation).
        self._values: dict[tuple[int, str], list[Any] | None] = {}
        self._columns: dict[tuple[int, str], set[str]] = {}
        self.full_scans = 0
        self._versions: tuple[int, list[dict[str, Any]]] | None = None

    @classmethod
    def of(cls, store: Store) -> StoreMetadata:
        """The metadata of ``store``, made once per Store object and kept on it."""
        meta = getattr(store, "checker_metadata", None)
        if not isinstance(meta, cls):
            meta = cls(store)
            store.checker_metadata = meta
        return meta

    def _fingerprint(self) -> str:
        return _fingerprint(self.cur)

    def _summary_columns(self, relation: str, where: str = "true") -> tuple[list[str], str]:
        cols = list(SUMMARY_EVIDENCE_COLUMNS) + list(SUMMARY_EXTRA_COLUMNS.get(relation, ()))
        run_cols = self.columns("run")
        cols += [c for c in sorted(run_cols) if c not in cols]
        cols += ["_clock", "_aligned_clock", "_scope", "_standing", "_granularity", "_sampler"]
        build = (f"SELECT {', '.join(cols)}, _rows FROM "
                 f"({_summary_sql(relation, self.columns(relation), run_cols, where)})")
        return cols, build

    def summary(self, relation: str) -> tuple[str, frozenset[str]]:
        """Name and columns of the summary table of ``relation``.

        The store's own (``main._argus_meta_<relation>``) when its stamp matches the data;
        otherwise a TEMP copy built for this connection (a check never writes the store).
        Within one connection the store's write generation says when to look again.
        """
        gen = self.store.generation
        cached = self._summaries.get(relation)
        if cached and cached[0] == gen:
            return cached[1], cached[2]
        cols, build = self._summary_columns(relation)
        name = f"_argus_meta_{relation}"
        if _stamp(self.cur, self.store, relation) == self._fingerprint():
            name = f"main.{name}"
        else:
            self.cur.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {build}")
            name = f"temp.{name}"
        self._summaries[relation] = (gen, name, frozenset(cols))
        return name, frozenset(cols)

    def program_versions(self) -> list[dict[str, Any]]:
        """Rows of ``program_version`` (for version selectors of constructs), read once per
        store generation."""
        gen = self.store.generation
        if self._versions is None or self._versions[0] != gen:
            self._versions = (gen, self.store.guarded_rows(
                "SELECT program_version, program, options, transform FROM program_version "
                "ORDER BY program_version", cursor=self.cur))
        return self._versions[1]

    def rows(self, relation: str, predicates: list[Pred], keys: list[Pred],
             columns: set[str] | None = None) -> list[dict[str, Any]]:
        """Distinct metadata rows of ``relation`` under ``predicates``, with ``keys`` as _k<i>.

        Args:
            relation: an evidence-bearing catalog relation.
            predicates: conditions over its metadata columns (and run columns).
            keys: expressions to group the rows by later (GROUP BY keys of the query).
            columns: the column names ``predicates`` and ``keys`` reference; None = unknown.
        """
        name, summary_cols = self.summary(relation)
        in_summary = columns is not None and columns <= summary_cols
        # The summary is read into Python (and filtered there) from the second question on:
        # a long-lived connection saves the round trips, a one-question process the read.
        asks = self._asks[(relation, self.store.generation)] = \
            self._asks.get((relation, self.store.generation), 0) + 1
        if in_summary and (asks > 1 or relation in self._py):
            cached = self._python_rows(relation, name)
            if cached is not None:
                from argusdb.checker.predicates import NotSimple

                try:
                    return _filter(cached, predicates, keys)
                except NotSimple:
                    pass
        sel = _grouped_select(keys)
        where = " AND ".join(f"({p.sql()})" for p in predicates) or "true"
        if in_summary:
            # groups in the order of their first summary row, as the Python path gives them
            sql = (f"SELECT {sel}, sum(_rows) AS _rows FROM {name} AS m WHERE {where} "
                   f"GROUP BY ALL ORDER BY min(m.rowid) LIMIT {MAX_META_ROWS}")
        else:
            self.full_scans += 1
            src = _source_sql(relation, self.columns(relation), self.columns("run"))
            sql = (f"SELECT {sel}, count(*) AS _rows FROM ({src}) AS m "
                   f"WHERE {where} GROUP BY ALL LIMIT {MAX_META_ROWS}")
        return self.store.guarded_rows(sql, cursor=self.cur)

    def _python_rows(self, relation: str, name: str) -> list[dict[str, Any]] | None:
        """The summary's rows as dicts (small summaries only), cached with the summary."""
        gen = self._summaries[relation][0]
        hit = self._py.get(relation)
        if hit is not None and hit[0] == gen:
            return hit[1]
        (n,) = self.cur.execute(f"SELECT count(*) FROM {name}").fetchone() or (0,)
        rows = None
        if n <= PYTHON_FILTER_MAX_ROWS:
            cur = self.cur.execute(f"SELECT * FROM {name}")
            cols = [d[0] for d in cur.description or []]
            rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
        self._py[relation] = (gen, rows)
        return rows

    def columns(self, relation: str) -> set[str]:
        """Columns of ``relation`` as this store has them (it may predate newer columns)."""
        key = (self.store.generation, relation)
        if key not in self._columns:
            # a literal, not a bound parameter: binding one makes DuckDB's client import pandas
            self._columns[key] = {r[0] for r in self.cur.execute(
                f"SELECT column_name FROM duckdb_columns() WHERE table_name = {_lit(relation)} "
                "AND schema_name = 'main'").fetchall()} or _catalog_columns(relation)
        return self._columns[key]

    def values(self, select_sql: str) -> list[Any] | None:
        """Values of an uncorrelated one-column subquery of the query (it passed every sandbox
        rule and runs locked down, under the time limit); None when it is not one or is too
        large to be a useful filter."""
        key = (self.store.generation, select_sql)
        if key in self._values:
            return self._values[key]
        try:
            rows = self.store.guarded_rows(
                f"SELECT * FROM ({select_sql}) LIMIT {MAX_SEMI_JOIN_VALUES + 1}",
                cursor=self.cur)
        except QueryFailed:
            rows = []  # correlated, or not evaluable alone: no narrowing
            vals = None
        else:
            vals = [next(iter(r.values())) for r in rows]
        if (vals is None or len(rows) > MAX_SEMI_JOIN_VALUES or (rows and len(rows[0]) != 1)
                or any(not isinstance(v, str | int | float) and v is not None for v in vals)):
            vals = None
        if len(self._values) > 256:  # the same few subqueries come back; keep it small
            self._values.clear()
        self._values[key] = vals
        return vals

    def versions(self, relation: str) -> set[str]:
        """Program versions that have rows in ``relation``."""
        name, _ = self.summary(relation)
        rows = self._python_rows(relation, name)
        if rows is not None:
            return {r["program_version"] for r in rows}
        return {r[0] for r in self.cur.execute(
            f"SELECT DISTINCT program_version FROM {name}").fetchall()}



def _fingerprint(cur: Any) -> str:
    # Changes with any insert (estimated sizes), any new run and any change of a view's
    # columns, and with the SQL modules of this code; the summaries themselves are left out.
    # (DuckDB re-serialises view SQL on reload, so view text cannot be compared.)
    row = cur.execute(r"""
        SELECT md5(coalesce(string_agg(table_name || ':' || estimated_size, ','
                                       ORDER BY table_name), '')
               || '|' || coalesce((SELECT string_agg(table_name || '.' || column_name
                                                     || ':' || data_type, ','
                                                     ORDER BY table_name, column_index)
                                   FROM duckdb_columns() c JOIN duckdb_views() v
                                     ON v.view_oid = c.table_oid
                                   WHERE NOT v.internal), '')
               || '|' || coalesce((SELECT max(run_seq) FROM run), 0)::VARCHAR)
        FROM duckdb_tables()
        WHERE NOT temporary AND table_name NOT LIKE '\_argus\_meta%' ESCAPE '\'
    """).fetchone()
    return f"{row[0] if row else ''}:{_modules_digest()}"


def _stamp(cur: Any, store: Store, relation: str) -> str | None:
    if not store.has_table("_argus_meta_stamp"):
        return None
    row = cur.execute("SELECT fingerprint FROM main._argus_meta_stamp "
                      f"WHERE relation = {_lit(relation)}").fetchone()
    return str(row[0]) if row else None


def refresh(store: Store, runs: Iterable[str] | None = None, relation: str = "evidence"
            ) -> str:
    """Bring the store's summary of ``relation`` up to date; a write path (after an ingest).

    With ``runs``, only those runs' rows and the attributed/derived rows of their program
    versions are summarised again (attribution is rebuilt per version); the rest of the
    summary stays. Without, or when the stored summary has other columns, it is rebuilt.
    Returns 'fresh', 'incremental' or 'rebuilt'.
    """
    if store.read_only or not store.keeps_summaries:
        return "fresh"
    meta = StoreMetadata(store)
    cur = meta.cur
    fp = meta._fingerprint()
    stamp = _stamp(cur, store, relation)
    if stamp == fp:
        return "fresh"
    cols, build = meta._summary_columns(relation)
    name = f"main._argus_meta_{relation}"
    have = {r[0] for r in cur.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = "
        "'main'", [f"_argus_meta_{relation}"]).fetchall()}
    incremental = stamp is not None and have == {*cols, "_rows"} \
        and stamp.split(":")[-1] == fp.split(":")[-1]
    run_list = sorted(set(runs or ()))
    first_seq = 0
    if incremental and runs is None and "run_seq" in have:
        # the runs the summary has not seen yet (and every attributed/derived row below)
        new = cur.execute(
            f"SELECT run_id, run_seq FROM run WHERE run_seq > (SELECT coalesce(max(run_seq), "
            f"-1) FROM {name})").fetchall()
        run_list = [r[0] for r in new]
        first_seq = min((int(r[1]) for r in new), default=0)
    elif runs is None:
        incremental = False

    # two disjoint parts, each a filter DuckDB pushes into the evidence view's branches:
    # the new runs' observed rows, and the attributed/derived rows of their versions (all
    # of them when the runs are not named: a materialization may have rebuilt any)
    parts = [f"run_id IN ({literal_list(run_list)}) AND evidence_class = 'observed'"]
    narrow: dict[str, str] = {}   # a part's extra filter on the relation (not the summary)
    if runs is None and incremental:
        # Attribution adds the new runs' rows, or rebuilds a version whole and says so
        # (materialization rows 'rebuilt'); derivation is small and re-read whole.
        whole = [r[0] for r in cur.execute("SELECT program_version FROM materialization "
                                           "WHERE name = 'rebuilt'").fetchall()]
        # observed rows of runs from first_seq on form one evidence-id range (run_seq * 2^32
        # + row), which DuckDB's zone maps prune: the scan reads the new rows, not the store
        parts = [f"run_id IN ({literal_list(run_list)}) AND evidence_class = 'observed'",
                 f"run_id IN ({literal_list(run_list)}) AND evidence_class = 'attributed'",
                 "evidence_class = 'derived'"]
        narrow[parts[0]] = f" AND evidence_id >= {first_seq * 2**32}"
        if whole:
            parts.append(f"program_version IN ({literal_list(whole)}) AND run_id NOT IN "
                         f"({literal_list(run_list)}) AND evidence_class = 'attributed'")
    elif runs is None:
        parts.append("evidence_class IN ('attributed', 'derived')")
    else:
        versions = [r[0] for r in cur.execute(
            f"SELECT DISTINCT program_version FROM run WHERE run_id IN ({literal_list(run_list)})"
        ).fetchall() if r[0] is not None]
        parts.append(f"program_version IN ({literal_list(versions)}) "
                     f"AND evidence_class IN ('attributed', 'derived')")
    cur.execute("BEGIN TRANSACTION")
    try:
        if incremental:
            for which in parts:
                cur.execute(f"DELETE FROM {name} WHERE {which}")
                cur.execute(f"INSERT INTO {name} "
                            f"{meta._summary_columns(relation, which + narrow.get(which, ''))[1]}")
        else:
            cur.execute(f"CREATE OR REPLACE TABLE {name} AS {build}")
        if runs is None and store.has_table("materialization"):
            cur.execute("DELETE FROM materialization WHERE name = 'rebuilt'")  # read above
        cur.execute("CREATE TABLE IF NOT EXISTS main._argus_meta_stamp "
                    "(relation VARCHAR PRIMARY KEY, fingerprint VARCHAR)")
        cur.execute("INSERT OR REPLACE INTO main._argus_meta_stamp VALUES (?, ?)",
                    [relation, _fingerprint(cur)])
        cur.execute("COMMIT")
    except Exception:
        cur.execute("ROLLBACK")
        raise
    store.generation += 1
    return "incremental" if incremental else "rebuilt"


def _catalog_columns(relation: str) -> set[str]:
    """The catalog's columns of ``relation`` (the checker's name resolution, loaded here)."""
    from argusdb.checker.resolve import catalog_columns

    return catalog_columns(relation)
