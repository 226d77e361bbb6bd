"""Materialized views: attribution and derivation, refreshed so a stale result is never served.

The logic lives in SQL modules (``queries/attribution/``, ``queries/derivation/``): their views
say what the materialized tables ``attribution_share``, ``region_attribution`` and
``derived_evidence`` should contain for the current inputs. This module only decides *when* to
rebuild and writes the rows. Each build records, in ``materialization``, a fingerprint of its
inputs (runs, region spans and version facts per program version; variant checks; and the SQL
text of the modules themselves, so changed code also rebuilds). :func:`refresh` rebuilds what is
stale; it runs inside every ingest transaction, so a run and the attribution that includes it
commit together. :func:`ensure_fresh` is the guard for readers (the API and the CLI call it
before answering), so nothing reads rows built from other inputs than the store now holds.

Example:
    >>> with Store.open("argus.duckdb") as st:
    ...     report = ensure_fresh(st)
    ...     report.rebuilt_versions
    []
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from argusdb import catalog
from argusdb.errors import StoreError
from argusdb.store import Store

#: Modules whose SQL enters each materialization's fingerprint.
_MODULES = {"attribution": "attribution.", "derivation": "derivation."}
#: The `materialization.program_version` key of a materialization built as a whole.
WHOLE = ""


@dataclass
class RefreshReport:
    """What a refresh rebuilt."""

    rebuilt_versions: list[str] = field(default_factory=list)
    attribution_rows: int = 0
    derivation_rebuilt: bool = False
    derived_rows: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.rebuilt_versions) or self.derivation_rebuilt


def _code_sha(name: str) -> str:
    text = "".join(m.text for m in catalog.query_modules()
                   if m.name.startswith(_MODULES[name]))
    return hashlib.md5(text.encode()).hexdigest()


def _attribution_state(store: Store) -> dict[str, str]:
    code = _code_sha("attribution")
    return {v: hashlib.md5(f"{fp}|{code}".encode()).hexdigest() for v, fp in
            store.sql("SELECT program_version, fingerprint FROM attribution_input_state")
            .fetchall()}


def _derivation_state(store: Store, versions: dict[str, str]) -> str:
    checks = store.sql("SELECT string_agg(concat_ws(':', variant_version, parent_version, "
                       "rel_err, tolerance, passed, checked_at), ',' ORDER BY ALL) "
                       "FROM variant_check").fetchone()
    doc = "|".join([*(f"{v}={fp}" for v, fp in sorted(versions.items())),
                    str(checks[0] if checks else ""), _code_sha("derivation")])
    return hashlib.md5(doc.encode()).hexdigest()


def _built(store: Store, name: str) -> dict[str, str]:
    return dict(store.sql("SELECT program_version, fingerprint FROM materialization "
                          "WHERE name = ?", [name]).fetchall())


def stale(store: Store) -> tuple[list[str], bool]:
    """Program versions whose attribution is stale, and whether derivation is stale."""
    current = _attribution_state(store)
    built = _built(store, "attribution")
    versions = sorted({v for v, fp in current.items() if built.get(v) != fp}
                      | (built.keys() - current.keys()))
    derivation = _built(store, "derivation").get(WHOLE) != _derivation_state(store, current)
    return versions, derivation


def refresh(store: Store) -> RefreshReport:
    """Rebuild every stale materialization. Call it inside the caller's transaction."""
    report = RefreshReport()
    current = _attribution_state(store)
    versions, derivation = stale(store)
    now = datetime.now(UTC).replace(tzinfo=None)
    if versions:
        store.sql("DELETE FROM attribution_share WHERE list_contains(?, program_version)",
                  [versions])
        store.sql("DELETE FROM region_attribution WHERE list_contains(?, program_version)",
                  [versions])
        store.sql("INSERT INTO attribution_share SELECT * FROM _attribution_share_build "
                  "WHERE list_contains(?, program_version)", [versions])
        store.sql("INSERT INTO region_attribution SELECT * FROM _region_attribution_build "
                  "WHERE list_contains(?, program_version)", [versions])
        counts = dict(store.sql(
            "SELECT program_version, count(*) FROM attribution_share "
            "WHERE list_contains(?, program_version) GROUP BY ALL", [versions]).fetchall())
        store.sql("DELETE FROM materialization WHERE name = 'attribution' "
                  "AND list_contains(?, program_version)", [versions])
        for v in versions:
            if v in current:
                store.insert_row("materialization", {
                    "name": "attribution", "program_version": v, "fingerprint": current[v],
                    "n_rows": int(counts.get(v, 0)), "built_at": now})
        report.rebuilt_versions = versions
        report.attribution_rows = int(sum(counts.values()))
    if derivation:
        store.sql("DELETE FROM derived_evidence")
        store.sql("INSERT INTO derived_evidence SELECT * FROM _derived_evidence_build")
        row = store.sql("SELECT count(*) FROM derived_evidence").fetchone()
        report.derived_rows = int(row[0]) if row else 0
        store.sql("DELETE FROM materialization WHERE name = 'derivation'")
        store.insert_row("materialization", {
            "name": "derivation", "program_version": WHOLE,
            "fingerprint": _derivation_state(store, current), "n_rows": report.derived_rows,
            "built_at": now})
        report.derivation_rebuilt = True
    return report


def ensure_fresh(store: Store) -> RefreshReport:
    """The readers' guard: refresh (in its own transaction) when anything is stale.

    Raises:
        StoreError: the store is stale but opened read-only, so it cannot be refreshed.
    """
    versions, derivation = stale(store)
    if not versions and not derivation:
        return RefreshReport()
    if store.read_only:
        raise StoreError(f"{store.path}: attribution or derivation is stale (versions "
                         f"{versions[:3]}) and the store is open read-only. Open it writable "
                         f"(e.g. 'argus conserve {store.path}') once to refresh it.")
    with store.transaction():
        return refresh(store)
