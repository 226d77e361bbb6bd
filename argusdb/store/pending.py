"""The pending marker beside an embedded store (``STORE.argus-pending``): the runs committed, or
being committed, and not yet checkpointed from the write-ahead log into the store file, with the
log's state before their COMMIT. It is written before COMMIT, so no window exists in which a
committed run can vanish silently when the log is damaged (:meth:`Store.transaction`).
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from argusdb.errors import StoreError


def pending_path(path: Path) -> Path:
    """Marker of runs committed, or being committed, and not yet checkpointed from the WAL
    into the store file (see :meth:`Store.transaction`)."""
    return path.with_name(path.name + ".argus-pending")


def wal_state(path: Path) -> str:
    """What the store's write-ahead log holds now: 'absent', or its size and SHA-256.

    Written into the pending marker just before a COMMIT, and taken again before the store
    is next opened: a log that is still byte for byte what it was before the COMMIT proves
    that the COMMIT never reached it (the runs were not committed); any other log may have
    held them. The log is at most a few MiB (every commit is checkpointed); past 64 MiB only
    its first and last MiB are hashed.
    """
    wal = path.with_name(path.name + ".wal")
    try:
        with wal.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            digest = hashlib.sha256()
            if size <= 64 * 2**20:
                for chunk in iter(lambda: fh.read(2**20), b""):
                    digest.update(chunk)
            else:
                digest.update(fh.read(2**20))
                fh.seek(size - 2**20)
                digest.update(fh.read(2**20))
    except FileNotFoundError:
        return "absent"
    return f"{size}:{digest.hexdigest()}"


def with_pending_runs(p: Path, exc: StoreError) -> StoreError:
    """``exc`` (the store could not be opened), naming the runs the pending marker holds when
    it is the write-ahead log that DuckDB could not replay."""
    marker = pending_path(p)
    if "write-ahead log" not in str(exc) or not marker.exists():
        return exc
    record = read_marker(marker)
    runs = record["committed"] + record["committing"]
    return StoreError(f"{exc} It held run(s) {', '.join(runs)}, named in {marker.name}.")


def write_marker(marker: Path, record: dict[str, Any]) -> None:
    """Write the pending marker durably (the file and its directory entry)."""
    tmp = marker.with_name(marker.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, marker)
    with suppress(OSError):
        fd = os.open(marker.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_marker(marker: Path) -> dict[str, Any]:
    """The pending marker: runs ``committed`` (their COMMIT returned), runs ``committing``
    (their COMMIT was under way) and ``wal`` (:func:`wal_state` before that COMMIT). A marker
    of an older release is a list of committed run ids, one a line."""
    text = marker.read_text(errors="replace")
    try:
        record = json.loads(text)
    except ValueError:
        return {"committed": text.split(), "committing": [], "wal": None}
    if not isinstance(record, dict):
        return {"committed": text.split(), "committing": [], "wal": None}
    return {"committed": [str(r) for r in record.get("committed") or []],
            "committing": [str(r) for r in record.get("committing") or []],
            "wal": record.get("wal")}
