"""The provenance pass's store side: which versions, runs, classes and signatures rows have.

A static check cannot tell which program versions ``WHERE region_id = 'softmax/softmax_fwd'``
selects; the store can. For every evidence-bearing FROM item the checker runs one small
metadata query with the query's own simple predicates on that item, e.g.::

    SELECT DISTINCT program_version, run_id, evidence_class, _standing, replay_pass, ...
    FROM <evidence metadata> WHERE region_id = 'softmax/softmax_fwd'

It runs against a per-connection summary of the relation (one row per program version, run,
task, region, kernel, signal, class, replay pass, warp role and scope level, with run columns
joined in), kept in a TEMP table (memory only, never the store file) and rebuilt when the
store's tables change. Predicates or keys on columns the summary lacks (``value``, ``launch``,
``pc`` ...) run against the relation itself: exact, only slower.

Derived metadata columns:
    ``_scope``: which scope coordinates are not 'all' ('kernel' when none is);
    ``_standing``: 'clean', or the run signature when the value is perturbed by it (a
    timing value from a run that is not ``timing_clean``, or any value from an instrumented or
    forced-wait run); NULL for derived values.

Example:
    >>> Metadata(store).rows("evidence", ["signal = 'duration'"], [])[0]["program_version"]
    'ee0369be2e320607'
"""

from __future__ import annotations

import weakref
from typing import Any

from argusdb.checker.resolve import catalog_columns
from argusdb.store import Store

#: Evidence columns the summary keeps (low cardinality); run columns are added to them.
SUMMARY_EVIDENCE_COLUMNS = ("program_version", "task_id", "run_id", "region_id", "kernel",
                            "signal", "unit", "evidence_class", "replay_pass", "warp_role",
                            "source_file")
#: Metadata columns every metadata row carries (the properties the rules look at).
META_COLUMNS = ("program_version", "run_id", "task_id", "evidence_class", "_standing",
                "signature", "replay_pass", "signal", "_scope")
_SCOPE_COORDS = ("sm", "cta", "warp", "warp_role", "loop_iter")
#: Units of timing values (ours and the tools' own spellings).
TIMING_UNITS = ("ns", "us", "ms", "s", "nsecond", "usecond", "msecond", "second", "cycle",
                "cycles")
#: Most metadata rows read per FROM item; beyond it the answer is truncated (and says so).
MAX_META_ROWS = 200_000
_LIVE: weakref.WeakKeyDictionary[Store, Metadata] = weakref.WeakKeyDictionary()


def evidence_relation(name: str) -> bool:
    """Whether rows of catalog relation ``name`` are evidence values (checked by the rules)."""
    cols = catalog_columns(name)
    return "run_id" in cols and ("value" in cols or "dur_ns" in cols)


def _source_sql(relation: str) -> str:
    """Every row of ``relation`` with the metadata columns, run columns joined in."""
    cols = catalog_columns(relation)
    run_cols = [c for c in sorted(catalog_columns("run")) if c not in cols]
    sel = ["x.*"]
    for c, default in (("program_version", "r.program_version"), ("task_id", "r.task_id"),
                       ("evidence_class", "'observed'"), ("replay_pass", "NULL::INTEGER"),
                       ("region_id", "NULL::VARCHAR"), ("kernel", "NULL::VARCHAR"),
                       ("source_file", "NULL::VARCHAR")):
        if c not in cols:
            sel.append(f"{default} AS {c}")
    if "signal" not in cols:
        sel += ["'dur_ns' AS signal", "'ns' AS unit"] if "dur_ns" in cols else \
            ["NULL::VARCHAR AS signal", "NULL::VARCHAR AS unit"]
    for c in _SCOPE_COORDS:
        if c not in cols:
            sel.append(f"'all' AS {c}")
    sel += [f"r.{c}" for c in run_cols if c not in ("program_version", "task_id")]
    scope = ", ".join(f"CASE WHEN {c} <> 'all' THEN '{c}' END" for c in _SCOPE_COORDS)
    timing = ", ".join(f"'{u}'" for u in TIMING_UNITS)
    return f"""
        SELECT *, coalesce(nullif(concat_ws(',', {scope}), ''), 'kernel') AS _scope,
               CASE WHEN evidence_class = 'derived' THEN NULL
                    WHEN coalesce(instrumentation, false) OR coalesce(forced_wait, false)
                         OR ((lower(unit) IN ({timing}) OR signal LIKE '%duration%')
                             AND NOT coalesce(timing_clean, false))
                    THEN coalesce(signature, 'unknown run')
                    ELSE 'clean' END AS _standing
        FROM (SELECT {', '.join(sel)} FROM {relation} AS x LEFT JOIN run AS r
              ON r.run_id = x.run_id)"""


class Metadata:
    """Metadata queries over one store, with the per-connection summaries they use."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # TEMP tables belong to one DuckDB session: summaries and their readers share this one.
        self.cur = store.cursor()
        self._summaries: dict[str, tuple[tuple[Any, ...], str, frozenset[str]]] = {}
        self.full_scans = 0

    @classmethod
    def of(cls, store: Store) -> Metadata:
        """The live Metadata of ``store`` (one per Store object)."""
        meta = _LIVE.get(store)
        if meta is None:
            meta = _LIVE[store] = cls(store)
        return meta

    def _generation(self) -> tuple[Any, ...]:
        # Any insert into any table changes an estimated size; a new run changes max(run_seq).
        row = self.cur.execute(
            "SELECT (SELECT sum(estimated_size) FROM duckdb_tables() WHERE NOT temporary), "
            "(SELECT max(run_seq) FROM run), (SELECT count(*) FROM run)").fetchone()
        return tuple(row or ())

    def summary(self, relation: str) -> tuple[str, frozenset[str]]:
        """Name and columns of the TEMP summary table of ``relation``, (re)built when stale."""
        gen = self._generation()
        cached = self._summaries.get(relation)
        if cached and cached[0] == gen:
            return cached[1], cached[2]
        name = f"_argus_meta_{relation}"
        cols = [c for c in SUMMARY_EVIDENCE_COLUMNS]
        cols += [c for c in sorted(catalog_columns("run")) if c not in cols]
        cols += ["_scope", "_standing"]
        keep = ", ".join(cols)
        self.cur.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {keep}, count(*) AS _rows "
                       f"FROM ({_source_sql(relation)}) GROUP BY ALL")
        self._summaries[relation] = (gen, name, frozenset(cols))
        return name, frozenset(cols)

    def rows(self, relation: str, predicates: list[str], keys: list[str],
             columns: set[str] | None = None) -> list[dict[str, Any]]:
        """Distinct metadata rows of ``relation`` under ``predicates``, with ``keys`` as _k<i>.

        Args:
            relation: an evidence-bearing catalog relation.
            predicates: SQL conditions over its (unqualified) columns and run columns.
            keys: SQL expressions to group the rows by later (GROUP BY keys of the query).
            columns: the column names ``predicates`` and ``keys`` reference; None = unknown.
        """
        name, summary_cols = self.summary(relation)
        if columns is not None and columns <= summary_cols:
            src, count = name, "sum(_rows)"
        else:
            src, count = f"({_source_sql(relation)})", "count(*)"
            self.full_scans += 1
        sel = [f"{k} AS _k{i}" for i, k in enumerate(keys)] + list(META_COLUMNS)
        where = " AND ".join(f"({p})" for p in predicates) or "true"
        sql = (f"SELECT {', '.join(sel)}, {count} AS _rows FROM {src} AS m WHERE {where} "
               f"GROUP BY ALL LIMIT {MAX_META_ROWS}")
        return self.store.guarded_rows(sql, cursor=self.cur)
