"""The store: where evidence lies, how it opens, and how it is written and read.

- :mod:`~argusdb.store.embedded`: one DuckDB file (:class:`~argusdb.store.embedded.Store`);
- :mod:`~argusdb.store.shared`: DuckLake on a PostgreSQL catalog (``ducklake:`` URIs), with
  :mod:`~argusdb.store.lake` (the URI, the attached connection),
  :mod:`~argusdb.store.faults` (PostgreSQL going away) and :mod:`~argusdb.store.upkeep`
  (compact, expire);
- :mod:`~argusdb.store.guard`: time limits and the watchdog of every statement;
- :mod:`~argusdb.store.versions`: the schema version and migrations;
  :mod:`~argusdb.store.snapshots`: a store as of a snapshot (``--as-of``);
- :mod:`~argusdb.store.materialize`: attribution and derivation kept current with their inputs;
- :mod:`~argusdb.store.copy`: one store's runs into another.

:func:`open_store` is the one way in: it picks the kind from the path, opens a snapshot, and
upgrades an older store opened read-only (a short read-write opening migrates it and rebuilds
what its release materialized), then reopens it.

Example:
    >>> with open_store("argus.duckdb", read_only=True) as st:  # doctest: +SKIP
    ...     st.rows("SELECT count(*) AS n FROM run")
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from argusdb.store import materialize, shared, snapshots
from argusdb.store.connect import SHARED_PREFIX
from argusdb.store.embedded import Store

__all__ = ["Store", "open_store"]


def open_store(path: str | Path, create: bool = False, read_only: bool = False,
               as_of: str | None = None, lock_timeout: float | None = None,
               on_upgrade: Callable[[Store], object] | None = None) -> Store:
    """Open a store; with ``create`` make it (and its tables) when missing.

    Args:
        path: a DuckDB file (the embedded store) or a ``ducklake:`` URI (a shared store).
        create: make the store when missing.
        read_only: open it read-only (DuckDB then refuses every write itself).
        as_of: a snapshot number or an ISO time: the store as it stood then, read-only.
        lock_timeout: seconds to wait for another process's lock (default
            :func:`argusdb.store.connect.lock_timeout_s`).
        on_upgrade: called with the read-write store after an older store opened read-only
            was migrated and re-materialized, before it is reopened read-only (the layer
            above refreshes what it keeps in the store, e.g. the checker's summaries).

    Raises:
        StoreError: see :meth:`Store.open_file` and :func:`argusdb.store.shared.open_shared`.
    """
    if str(path).startswith(SHARED_PREFIX):
        return shared.open_shared(str(path), create=create, read_only=read_only, as_of=as_of,
                                  lock_timeout=lock_timeout)
    if as_of is not None:
        with Store.open_file(path, read_only=True, lock_timeout=lock_timeout) as src:
            return snapshots.as_of(src, as_of)
    st = Store.open_file(path, create=create, read_only=read_only, lock_timeout=lock_timeout)
    if not st.needs_upgrade:
        return st
    st.close()
    with Store.open_file(path, lock_timeout=lock_timeout) as w:
        materialize.ensure_fresh(w)
        if on_upgrade is not None:
            on_upgrade(w)
    return Store.open_file(path, read_only=True, lock_timeout=lock_timeout, upgraded=True)
