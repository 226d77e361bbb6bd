"""Upkeep of a shared store: DuckLake's own maintenance, under the writers' lock
(``argus lake compact``, ``argus lake expire``; docs/shared-store.md, "Upkeep")."""

from __future__ import annotations

import duckdb

from argusdb.errors import StoreError
from argusdb.schema.sqltext import literal as _q
from argusdb.store.faults import first_line as _first
from argusdb.store.shared import SharedStore, open_shared
from argusdb.store.versions import parse_time


def compact(path: str) -> dict[str, int]:
    """Merge a shared store's small adjacent data files (``ducklake_merge_adjacent_files``),
    under the writers' lock; the data files before and after. Every snapshot still reads
    the same rows; the merged files stay on disk for older snapshots until :func:`expire`.
    """
    st = open_shared(path)
    try:
        with st._lock, st._writer():
            before = _files(st)
            st.con.execute("CALL ducklake_merge_adjacent_files('lake')")
            return {"files_before": before, "files_after": _files(st)}
    except duckdb.Error as exc:
        raise StoreError(f"{path}: compacting failed ({_first(exc)}); nothing changed. "
                         "Check that PostgreSQL is up and run it again.") from exc
    finally:
        st.close()


def expire(path: str, older_than: str) -> dict[str, int]:
    """Expire a shared store's snapshots committed before ``older_than`` (an ISO time in UTC)
    and delete the data files no remaining snapshot reads (DuckLake keeps the newest snapshot
    always). The store's rows now are untouched; ``--as-of`` earlier than the oldest kept
    snapshot is no longer answered. Returns the snapshots expired, files deleted, snapshots
    kept."""
    at = parse_time(older_than).isoformat(sep=" ") + "+00"
    st = open_shared(path)
    try:
        with st._lock, st._writer():
            expired = st.con.execute("CALL ducklake_expire_snapshots('lake', older_than => "
                                     f"{_q(at)}::TIMESTAMPTZ)").fetchall()
            deleted = st.con.execute("CALL ducklake_cleanup_old_files('lake', "
                                     "cleanup_all => true)").fetchall()
            return {"snapshots_expired": len(expired), "files_deleted": len(deleted),
                    "snapshots_kept": len(st.snapshots())}
    except duckdb.Error as exc:
        raise StoreError(f"{path}: expiring snapshots failed ({_first(exc)}); nothing "
                         "changed. Check that PostgreSQL is up and run it again.") from exc
    finally:
        st.close()


def _files(st: SharedStore) -> int:
    n = 0
    for t in sorted(st._lake_tables()):
        row = st.con.execute(f"SELECT count(*) FROM ducklake_list_files('lake', {_q(t)})"
                             ).fetchone()
        n += int(row[0]) if row else 0
    return n
