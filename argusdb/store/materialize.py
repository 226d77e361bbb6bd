"""Materialized views: attribution and derivation, refreshed so a stale result is never served.

The logic lives in SQL modules (``argusdb/queries/attribution/``, ``argusdb/queries/derivation/``):
their views and table macros say what the materialized tables ``attribution_split``,
``region_attribution`` and ``derived_evidence`` should contain for the current inputs. This module
only decides *when* to rebuild and writes the rows. Each build records, in ``materialization``, a
fingerprint of its inputs (runs, region spans and version facts per program version; variant checks;
and the SQL text of the modules themselves, so changed code also rebuilds). :func:`refresh` rebuilds
what is stale: a version whose static inputs (spans, listings, call sites, facts, SQL) changed is
rebuilt whole; runs added since the last build are attributed on their own, together with the older
runs whose shared lines depend on the newest mapping run. Derivation is kept per derivation group
(``derivation_input_state``: a probe, a version's forced-synchronous runs, a launch group's
clocks): only the groups whose inputs changed are rebuilt. It runs inside every ingest transaction,
so a run and the attribution that includes it commit together. :func:`ensure_fresh` is the guard for
readers (the API and the CLI call it before answering), so nothing reads rows built from other
inputs than the store now holds.

Example:
    >>> with open_store("argus.duckdb") as st:
    ...     report = ensure_fresh(st)
    ...     report.rebuilt_versions
    []
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache

from argusdb.errors import StoreError
from argusdb.schema import catalog
from argusdb.store.embedded import Store

#: Modules whose SQL enters each materialization's fingerprint.
_MODULES = {"attribution": "attribution.", "derivation": "derivation."}
#: The `materialization.program_version` key of a materialization built as a whole.
WHOLE = ""


@dataclass
class RefreshReport:
    """What a refresh rebuilt."""

    rebuilt_versions: list[str] = field(default_factory=list)
    #: Attributed source rows (observed rows x signal) of the rebuilt versions, all their runs.
    attribution_rows: int = 0
    derivation_rebuilt: bool = False
    #: Derivation groups rebuilt or dropped ('<derived signal>:<key>', derivation_input_state).
    derivation_groups: list[str] = field(default_factory=list)
    #: Derived rows the rebuilt groups now hold.
    derived_rows: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.rebuilt_versions) or self.derivation_rebuilt


@cache
def _code_sha(name: str) -> str:
    """md5 of the SQL of a materialization's modules (read once per process)."""
    # The shape macros (argusdb/queries/shape.sql) are part of every materialization's code.
    text = "".join(m.text for m in catalog.query_modules()
                   if m.name.startswith(_MODULES[name]) or m.name == "shape")
    return hashlib.md5(text.encode()).hexdigest()


def _runs_fp(ids: list[str]) -> str:
    return hashlib.md5(",".join(ids).encode()).hexdigest()


@dataclass
class _Version:
    """A program version's attribution inputs now (static: with the module SQL)."""

    static: str
    run_ids: list[str]
    run_seqs: list[int]


def _attribution_state(store: Store) -> dict[str, _Version]:
    code = _code_sha("attribution")
    return {v: _Version(hashlib.md5(f"{fp}|{code}".encode()).hexdigest(), list(ids),
                        [int(s) for s in seqs]) for v, fp, ids, seqs in
            store.sql("SELECT program_version, static_fingerprint, run_ids, run_seqs "
                      "FROM attribution_input_state").fetchall()}


#: The derivation groups' build arguments, by derived signal (``_derived_evidence_build_of``).
_GROUP_ARGS = ("exposed_latency", "exposed_communication", "clock_offset")


def _derivation_state(store: Store) -> dict[str, str]:
    """Fingerprint per derivation group (``derivation_input_state``), with the module SQL."""
    code = _code_sha("derivation")
    return {str(g): hashlib.md5(f"{fp}|{code}".encode()).hexdigest() for g, fp in store.sql(
        "SELECT derivation_group, fingerprint FROM derivation_input_state").fetchall()}


def _derivation_plan(store: Store) -> tuple[dict[str, str], list[str], list[str]]:
    """The groups' fingerprints now, the groups to build (new or changed inputs) and the built
    groups to drop (their inputs are gone, or a whole build of older code recorded as '')."""
    current = _derivation_state(store)
    built = {str(g): str(fp) for g, fp in store.sql(
        "SELECT program_version, fingerprint FROM materialization WHERE name = 'derivation'"
    ).fetchall()}
    if WHOLE in built:
        return current, sorted(current), sorted(built)
    return (current, sorted(g for g, fp in current.items() if built.get(g) != fp),
            sorted(built.keys() - current.keys()))


def _built(store: Store) -> dict[str, tuple[str, str, int, int]]:
    """Per version, its attribution build: fingerprint, runs' fingerprint, run_seq built,
    attributed source rows."""
    return {str(v): (str(fp), str(rfp), int(seq), int(n)) for v, fp, rfp, seq, n in store.sql(
        "SELECT program_version, fingerprint, runs_fingerprint, run_seq_built, n_rows "
        "FROM materialization WHERE name = 'attribution'").fetchall()}


def _plan(store: Store, current: dict[str, _Version],
          built: dict[str, tuple[str, str, int, int]] | None = None
          ) -> dict[str, list[str] | None]:
    """Versions to rebuild: None for the whole version, else the runs added since its build."""
    if built is None:
        built = _built(store)
    plan: dict[str, list[str] | None] = {v: None for v in built.keys() - current.keys()}
    for v, now in current.items():
        b = built.get(v)
        old = [r for r, s in zip(now.run_ids, now.run_seqs, strict=True) if b and s <= b[2]]
        if b is None or b[0] != now.static or _runs_fp(old) != b[1]:
            plan[v] = None
            continue
        new = [r for r, s in zip(now.run_ids, now.run_seqs, strict=True) if s > b[2]]
        if new:
            plan[v] = new
    return plan


def stale(store: Store) -> tuple[list[str], bool]:
    """Program versions whose attribution is stale, and whether derivation is stale."""
    _, build, drop = _derivation_plan(store)
    return sorted(_plan(store, _attribution_state(store))), bool(build or drop)


def _rebuild(store: Store, versions: list[str], from_seq: int) -> None:
    """Rebuild attribution of ``versions``: whole (``from_seq`` 0) or their runs from ``from_seq``.

    Only the runs rebuilt and the older mapping runs they need are read (as evidence-id ranges,
    which DuckDB prunes), so adding a run to a store of N runs costs the same for any N.
    """
    extra: list[int] = []
    if from_seq:
        # The newest counted run before the rebuilt ones, per kernel: the mapping run of the
        # rebuilt runs that have no counted run among themselves before them.
        extra = sorted({int(s) for (s,) in store.sql(
            "SELECT max(r.run_seq) FROM region_attribution AS a JOIN run AS r USING (run_id) "
            "WHERE list_contains(?, a.program_version) AND a.signal = 'inst_executed' "
            "AND r.run_seq < ? GROUP BY a.program_version, a.kernel",
            [versions, from_seq]).fetchall()})
    else:
        for table in ("attribution_split", "region_attribution"):
            store.sql(f"DELETE FROM {table} WHERE list_contains(?, program_version)", [versions])
    store.sql("INSERT INTO attribution_split BY NAME SELECT * FROM "
              "_attribution_split_build(?::VARCHAR[], ?::BIGINT, ?::BIGINT[])",
              [versions, from_seq, extra])
    store.sql("INSERT INTO region_attribution BY NAME SELECT * FROM "
              "_region_attribution_build(?::VARCHAR[], ?::BIGINT)", [versions, from_seq])


def _sourced(store: Store, from_seq: int) -> set[str]:
    """The versions with attributable rows (``attribution_source``) in runs from ``from_seq``
    (none asked for 0)."""
    if not from_seq:
        return set()
    return {str(v) for (v,) in store.sql(
        "SELECT DISTINCT program_version FROM attribution_source WHERE run_seq >= ? "
        "AND evidence_id >= evidence_id_of(?, 0)", [from_seq, from_seq]).fetchall()}


def _resplits_older(store: Store, version: str, from_seq: int) -> bool:
    """Whether runs from ``from_seq`` change the split of older runs of ``version``.

    An older run's mapping run is the newest counted run before it, else the first after it; new
    (newer) runs only change that for a kernel with fewer than two older counted runs, when the
    new runs count instructions of it.
    """
    row = store.sql(
        "WITH new AS (SELECT DISTINCT kernel FROM attribution_source WHERE program_version = ? "
        "AND signal = 'inst_executed' AND run_seq >= ? AND evidence_id >= evidence_id_of(?, 0)), "
        "old AS (SELECT a.kernel, count(DISTINCT a.run_id) AS n FROM region_attribution AS a "
        "JOIN run AS r USING (run_id) WHERE a.program_version = ? AND a.signal = "
        "'inst_executed' AND r.run_seq < ? GROUP BY a.kernel) "
        "SELECT count(*) FROM new LEFT JOIN old USING (kernel) WHERE coalesce(old.n, 0) < 2",
        [version, from_seq, from_seq, version, from_seq]).fetchone()
    return bool(row and row[0])


def _fold_pc_lines(store: Store, book: _Book, written: Written | None) -> None:
    """Bring the PC -> line map (``attribution_pc_line``) up to date: fold in the listings of
    the runs added since it was last brought up to date (all of them when the map was built by
    other SQL, or never), replacing the rows of the PCs they give. When the only runs since
    are the caller's and it wrote no listing (``written``), the map is current as it is."""
    code = _code_sha("attribution")
    row = store.sql("SELECT fingerprint, run_seq_built FROM materialization "
                    "WHERE name = 'pc_line'").fetchone()
    top = store.sql("SELECT coalesce(max(run_seq), 0) FROM run").fetchone()
    newest = int(top[0]) if top else 0
    built = int(row[1]) if row and row[0] == code else 0
    if row and row[0] == code and built >= newest:
        return
    if not (written is not None and built and "instruction" not in written.tables
            and built >= written.first_seq - 1):
        _fold(store, built)
    book.put({"name": "pc_line", "program_version": WHOLE, "fingerprint": code,
              "runs_fingerprint": "", "run_seq_built": newest, "n_rows": 0,
              "built_at": datetime.now(UTC).replace(tzinfo=None)})


def _fold(store: Store, built: int) -> None:
    if not built:
        store.sql("DELETE FROM attribution_pc_line")
    store.sql("CREATE OR REPLACE TEMP TABLE _argus_pc_line AS "
              "SELECT * FROM _attribution_pc_line_fold(?::BIGINT)", [built])
    store.sql("DELETE FROM attribution_pc_line AS o USING _argus_pc_line AS n "
              "WHERE o.program_version = n.program_version AND o.kernel = n.kernel "
              "AND o.pc = n.pc")
    store.sql("INSERT INTO attribution_pc_line BY NAME SELECT * FROM _argus_pc_line")
    store.sql("DROP TABLE _argus_pc_line")


@dataclass(frozen=True)
class Written:
    """What the caller's transaction wrote before its refresh: the tables it appended rows to
    and the first run_seq it gave (an ingest knows both; :func:`refresh` then skips reading
    what the new runs cannot have changed)."""

    tables: frozenset[str]
    first_seq: int


class _Book:
    """The ``materialization`` rows a refresh writes, written at its end: one DELETE of the
    keys they replace and one INSERT (a statement on a shared store asks its catalog for the
    table's files each time)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], dict[str, object]] = {}
        self.drop: set[tuple[str, str]] = set()

    def put(self, row: dict[str, object]) -> None:
        key = (str(row["name"]), str(row["program_version"]))
        self.drop.add(key)
        self.rows[key] = row

    def remove(self, name: str, versions: list[str]) -> None:
        for v in versions:
            self.drop.add((name, v))
            self.rows.pop((name, v), None)

    def write(self, store: Store) -> None:
        if self.drop:
            store.sql("DELETE FROM materialization WHERE list_contains(?, "
                      "name || chr(31) || program_version)",
                      [sorted(f"{n}\x1f{v}" for n, v in self.drop)])
        if self.rows:
            store.insert_rows("materialization", list(self.rows.values()))


def refresh(store: Store, written: Written | None = None) -> RefreshReport:
    """Rebuild every stale materialization. Call it inside the caller's transaction;
    ``written``: what it wrote, when it knows (an ingest)."""
    with store.inputs_held():
        return _refresh(store, written)


def _refresh(store: Store, written: Written | None) -> RefreshReport:
    report = RefreshReport()
    book = _Book()
    _fold_pc_lines(store, book, written)
    current = _attribution_state(store)
    built = _built(store)
    plan = _plan(store, current, built)
    now = datetime.now(UTC).replace(tzinfo=None)
    seqs = {v: dict(zip(s.run_ids, s.run_seqs, strict=True)) for v, s in current.items()}
    partial = {v: min(seqs[v][r] for r in runs) for v, runs in plan.items() if runs}
    # Runs added with nothing to attribute change nothing (one read finds the versions whose
    # new runs have attributable rows; the others keep their rows and their count).
    unsourced = set(partial) - _sourced(store, min(partial.values(), default=0))
    whole = sorted({v for v, runs in plan.items() if runs is None}
                   | {v for v, lo in partial.items()
                      if v not in unsourced and _resplits_older(store, v, lo)})
    if whole:
        _rebuild(store, whole, 0)
    for version, lo in sorted(partial.items()):
        if version not in whole and version not in unsourced:
            _rebuild(store, [version], lo)
    for version in sorted(plan):
        book.remove("attribution", [version])
        state = current.get(version)
        if state is None:
            continue
        if version in unsourced and version not in whole:
            n = built[version][3]
        else:
            row = store.sql("SELECT coalesce(sum(n_source_rows), 0) FROM region_attribution "
                            "WHERE program_version = ?", [version]).fetchone()
            n = int(row[0]) if row else 0
        book.put({
            "name": "attribution", "program_version": version, "fingerprint": state.static,
            "runs_fingerprint": _runs_fp(state.run_ids),
            "run_seq_built": max(state.run_seqs, default=0), "n_rows": n, "built_at": now})
        report.attribution_rows += n
    report.rebuilt_versions = sorted(plan)
    _note(book, whole, now)
    _rederive(store, report, now, book)
    book.put(_token_row(store))
    book.write(store)
    return report


def _rederive(store: Store, report: RefreshReport, now: datetime, book: _Book) -> None:
    """Rebuild the derivation groups whose inputs changed (``derivation_input_state``): delete
    their rows and those of dropped groups, build the rows of those groups only, record each
    group's fingerprint. The rows equal a whole build's: a group's rows read its inputs alone."""
    current, build, drop = _derivation_plan(store)
    if not build and not drop:
        return
    if WHOLE in drop:
        store.sql("DELETE FROM derived_evidence")
    else:
        store.sql("DELETE FROM derived_evidence WHERE list_contains(?, derivation_group_of("
                  "signal, variant_version, program_version, conditions))", [build + drop])
    keys = {d: [g.split(":", 1)[1] for g in build if g.split(":", 1)[0] == d] for d in _GROUP_ARGS}
    if build:
        store.sql("INSERT INTO derived_evidence SELECT * FROM _derived_evidence_build_of("
                  "?::VARCHAR[], ?::VARCHAR[], ?::VARCHAR[])", [keys[d] for d in _GROUP_ARGS])
    rows = {str(g): int(n) for g, n in store.sql(
        "SELECT derivation_group_of(signal, variant_version, program_version, conditions) AS g, "
        "count(*) FROM derived_evidence WHERE list_contains(?, g) GROUP BY g", [build]
    ).fetchall()}
    book.remove("derivation", build + drop)
    for group in build:
        book.put({
            "name": "derivation", "program_version": group, "fingerprint": current[group],
            "runs_fingerprint": "", "run_seq_built": 0, "n_rows": rows.get(group, 0),
            "built_at": now})
    report.derivation_groups = sorted(build + drop)
    report.derivation_rebuilt = True
    report.derived_rows = sum(rows.values())


def _note(book: _Book, whole: list[str], now: datetime) -> None:
    """Record, in the refresh's transaction, the versions whose attribution was rebuilt whole
    (``materialization`` rows named 'rebuilt'): the checker's summary refresh re-reads their
    attributed rows and clears the rows. Runs attributed on their own are the runs the summary
    has not seen yet; nothing else changes attributed rows."""
    for version in whole:
        book.put({
            "name": "rebuilt", "program_version": version, "fingerprint": "",
            "runs_fingerprint": "", "run_seq_built": 0, "n_rows": 0, "built_at": now})


def _inputs_token(store: Store) -> str:
    """A cheap digest of everything any materialization reads: runs (their rows are immutable),
    versions, spans, variant checks, module SQL. Unchanged token, nothing to refresh."""
    row = store.sql(
        "SELECT (SELECT count(*) || ':' || coalesce(max(run_seq), 0) FROM run), "
        "(SELECT count(*) || ':' || coalesce(sum(hash(program_version, parent_version, "
        "transform, transform_task_id, source_sha256, target)), 0) FROM program_version), "
        "(SELECT count(*) || ':' || coalesce(sum(hash(program_version, region_id, start_line, "
        "end_line)), 0) FROM region_span), "
        "(SELECT count(*) || ':' || coalesce(max(checked_at)::VARCHAR, '') FROM variant_check)"
    ).fetchone()
    doc = "|".join([*(str(x) for x in row or ()), _code_sha("attribution"),
                    _code_sha("derivation")])
    return hashlib.md5(doc.encode()).hexdigest()


def _token_row(store: Store) -> dict[str, object]:
    return {"name": "inputs", "program_version": WHOLE, "fingerprint": _inputs_token(store),
            "runs_fingerprint": "", "run_seq_built": 0, "n_rows": 0,
            "built_at": datetime.now(UTC).replace(tzinfo=None)}


def _record_token(store: Store) -> None:
    book = _Book()
    book.put(_token_row(store))
    book.write(store)


def ensure_fresh(store: Store) -> RefreshReport:
    """The readers' guard: refresh (in its own transaction) when anything is stale.

    Raises:
        StoreError: the store is stale but opened read-only, so it cannot be refreshed.
    """
    row = store.sql("SELECT fingerprint FROM materialization WHERE name = 'inputs'").fetchone()
    if row and row[0] == _inputs_token(store):
        return RefreshReport()
    versions, derivation = stale(store)
    if not versions and not derivation:
        if not store.read_only:
            with store.transaction():
                _record_token(store)
        return RefreshReport()
    if store.read_only:
        raise StoreError(f"{store.path}: attribution or derivation is stale (versions "
                         f"{versions[:3]}) and the store is open read-only. Open it writable "
                         f"(e.g. 'argus conserve {store.path}') once to refresh it.")
    with store.transaction():
        return refresh(store)
