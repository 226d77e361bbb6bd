"""Accepted checks kept between processes: a question asked again of an unchanged store file
runs without loading the checker (sqlglot and its DuckDB dialect cost ~0.35 s CPU a process,
its analysis of the README's first question ~0.1 s more).

A kept entry holds what running and explaining an accepted question needs: the SQL the
checker generated, its provenance and whether it reads evidence. It is found under a key made of

- the question's text;
- the code that judged it (:func:`code_fingerprint`: the size and modification time of
  argusdb's ``__init__.py``, which names its version, of every file of the checker, the API,
  the schema and the SQL modules, and of sqlglot's version file);
- the store file as it stands (:func:`store_identity`: device, inode, size and modification
  time of the file and of its write-ahead log).

That is sound because a verdict is a function of the text, the code and the data, and the data
of an embedded store change only through a write to its file or its log. Entries are written
and read only by read-only connections to an embedded store file: while one is open, DuckDB
lets no process write the file, so the identity read at the question is the identity of the
data it ran on; a write after it gives the file a new size or modification time (the next
writer opens the file after this process closed it, a modification-clock tick later).
A shared store opened read-only is pinned to one DuckLake snapshot, which never changes: its
checks are kept under :meth:`~argusdb.store.shared.SharedStore.snapshot_identity` (a digest of
the catalog, its schema, the snapshot and its commit time) instead of a file's identity.
Refusals are never kept: they are judged afresh, with the current rules' messages.

Entries live in the user's cache folder (``$ARGUS_CACHE_DIR``, else
``$XDG_CACHE_HOME/argusdb/checked``, else ``~/.cache/argusdb/checked``), never in the store:
a read never writes the store. ``ARGUS_CACHE_DIR=off`` (or empty) turns the cache off. A
folder that is not the user's own, or that others may write, is not used (an entry's SQL
runs without a check).

Example:
    >>> entry = KeptCheck("SELECT 1", "SELECT 1", {"constructs": []})
    >>> entry.ok, entry.provenance()["constructs"]
    (True, [])
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from argusdb import environment

#: Environment variable naming the folder of kept checks ("off" or empty: none kept).
CACHE_ENV = environment.CACHE_DIR.name
#: Most entries the folder holds; past it the oldest half is removed.
MAX_ENTRIES = 4096
#: Parts of the package a verdict depends on (files under them key the cache).
_JUDGING = ("checker", "api", "schema", "queries")


@dataclass
class KeptCheck:
    """An accepted check read back from the cache: what :meth:`argusdb.checker.Report` gives
    a question that runs (``ok``, ``executable``, ``provenance()``)."""

    sql: str
    executable: str
    kept_provenance: dict[str, Any]
    #: Whether the question reads evidence (a base stream), as its check found.
    reads_evidence: bool = True
    findings: list[Any] = field(default_factory=list)
    context: None = None

    @property
    def ok(self) -> bool:
        return True

    def provenance(self) -> dict[str, Any]:
        """The provenance recorded when the question was checked (a fresh copy)."""
        out: dict[str, Any] = json.loads(json.dumps(self.kept_provenance))
        return out


def cache_dir() -> Path | None:
    """The folder of kept checks, or None when the cache is off."""
    raw = os.environ.get(CACHE_ENV)
    if raw is not None:
        return None if raw.strip().lower() in ("", "off", "0", "none") else Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "argusdb" / "checked"


def _usable(folder: Path, create: bool) -> bool:
    """Whether ``folder`` is this user's own and writable by no one else (made, 0700, when
    ``create``)."""
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return stat.S_ISDIR(st.st_mode) and mine and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@cache
def code_fingerprint() -> str:
    """A digest of the code that judges a question: the path, size and modification time of
    argusdb's ``__init__.py`` (which names its version), of every file of the checker, the
    API, the schema and the SQL modules, and of sqlglot's version file (the executable SQL is
    sqlglot's output)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(b"argusdb kept checks 2\n")
    files = [root / "__init__.py"] + [
        p for part in _JUDGING for p in sorted((root / part).rglob("*"))
        if p.suffix in (".py", ".sql", ".csv", ".yaml", ".json")]
    spec = find_spec("sqlglot")
    if spec is not None and spec.origin:
        files += [Path(spec.origin).with_name(n) for n in ("_version.py", "__init__.py")]
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def store_identity(path: str) -> str | None:
    """Device, inode, size and modification time of the store file and of its write-ahead
    log (``-`` when it has none); None when ``path`` is not a file."""
    parts = []
    for p in (path, f"{path}.wal"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            if p == path:
                return None
            parts.append("-")
            continue
        except OSError:
            return None
        if p == path and not stat.S_ISREG(st.st_mode):
            return None
        parts.append(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def _entry(folder: Path, identity: str, sql: str) -> Path:
    key = hashlib.sha256(f"{code_fingerprint()}\0{identity}\0{sql}".encode()).hexdigest()
    return folder / f"{key}.json"


def load(identity: str, sql: str) -> KeptCheck | None:
    """The kept accepted check of ``sql`` over the store of ``identity``, or None."""
    folder = cache_dir()
    if folder is None or not _usable(folder, create=False):
        return None
    try:
        doc = json.loads(_entry(folder, identity, sql).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("sql") != sql or doc.get("identity") != identity \
            or not isinstance(doc.get("executable"), str) \
            or not isinstance(doc.get("provenance"), dict) \
            or not isinstance(doc.get("reads_evidence"), bool):
        return None
    return KeptCheck(sql, doc["executable"], doc["provenance"], doc["reads_evidence"])


def save(identity: str, sql: str, executable: str, provenance: dict[str, Any],
         reads_evidence: bool = True) -> bool:
    """Keep an accepted check (atomically: a reader sees a whole entry or none), with whether
    the question reads evidence (:meth:`argusdb.api.Connection.facts` answers only those that
    do not); False when the cache is off or its folder cannot be written (the answer does not
    depend on it)."""
    folder = cache_dir()
    if folder is None or not _usable(folder, create=True):
        return False
    doc = {"sql": sql, "identity": identity, "executable": executable,
           "provenance": provenance, "reads_evidence": bool(reads_evidence)}
    try:
        text = json.dumps(doc, default=str)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".kept-", suffix=".tmp")
    except (OSError, TypeError, ValueError):
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, _entry(folder, identity, sql))
        _prune(folder)
    except OSError:
        with suppress(OSError):
            os.unlink(tmp)
        return False
    return True


def _prune(folder: Path) -> None:
    """Remove the oldest half of the entries once there are more than MAX_ENTRIES."""
    entries = [e for e in os.scandir(folder) if e.name.endswith(".json")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime_ns)
    for e in entries[:len(entries) // 2]:
        with suppress(OSError):
            os.unlink(e.path)
