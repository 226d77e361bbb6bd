"""Connecting to an embedded store's file: the lock wait, the session settings every store
connection gets, and what a file that is not a store is told (:func:`connect_waiting`).
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import duckdb

from argusdb import environment
from argusdb.errors import StoreError
from argusdb.schema.sqltext import literal
from argusdb.store.guard import first_line

#: Seconds a writer (or reader) waits for another process's lock on an embedded store; the
#: environment variable ARGUS_LOCK_TIMEOUT overrides it.
LOCK_TIMEOUT_S = 120.0
#: Prefix of a shared store's URI (see :mod:`argusdb.store.shared`).
SHARED_PREFIX = "ducklake:"


def lock_timeout_s() -> float:
    """The lock wait limit: ARGUS_LOCK_TIMEOUT (seconds) when set, else LOCK_TIMEOUT_S."""
    raw = environment.LOCK_TIMEOUT.get()
    if raw is None:
        return LOCK_TIMEOUT_S
    try:
        seconds = float(raw)
        if math.isnan(seconds):
            raise ValueError(raw)
        return max(0.0, seconds)
    except ValueError as exc:
        raise StoreError(f"ARGUS_LOCK_TIMEOUT={raw!r} is not a number of seconds. Set it to "
                         "e.g. 120, or unset it.") from exc


#: Connection settings of every store: never load or fetch an extension (a file that is
#: not a DuckDB database must not trigger a download of a scanner for its format).
CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
           "allow_community_extensions": False}


#: Compression methods a store never tries. DuckDB analyses FSST for every text column of
#: every row group it writes; on argusdb's tables dictionary, constant or RLE encoding won
#: every time (100 ncu source pages with the other demo artefacts, a Kineto trace of 20
#: replicas, an nsys export: no FSST segment, and the same store bytes without it), and the
#: analysis cost ~0.5 s CPU of the ~3.2 s DuckDB spent appending and committing 1.09 M
#: evidence rows (``bench/bench_ingest_many.py``, README "Scale").
NOT_TRIED_COMPRESSION = "FSST,DICT_FSST"


def session(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` without DuckDB's own progress bar (it draws on stdout, a file or a pipe too,
    for any statement past 2 s, which broke the ``--json`` answer of a long ingest) and with
    :data:`NOT_TRIED_COMPRESSION` (settings connect() does not take).

    A second connection of this process to the same file shares the first one's database
    instance, whose configuration a locked-down store has locked: there the settings cannot
    change and stay as they are (a CLI command, where the bar would land in its answer,
    opens its store once)."""
    row = con.execute("SELECT current_setting('enable_progress_bar'), value FROM "
                      "duckdb_settings() WHERE name = 'disabled_compression_methods'").fetchone()
    for differs, stmt in ((row is None or row[0], "SET enable_progress_bar = false"),
                          (row is None or str(row[1]).upper() != NOT_TRIED_COMPRESSION,
                           f"SET disabled_compression_methods = {literal(NOT_TRIED_COMPRESSION)}")):
        if differs:
            with suppress(duckdb.InvalidInputException):
                con.execute(stmt)
    return con


#: DuckDB writes its magic bytes at offset 8 of every database file.
_MAGIC = (8, b"DUCK")


def not_a_store(p: Path) -> str | None:
    """What the file at ``p`` is, when it is not a DuckDB database (None when it is one)."""
    try:
        with p.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not head:
        return None  # an empty file: DuckDB makes it a new database
    if head[_MAGIC[0]:_MAGIC[0] + len(_MAGIC[1])] == _MAGIC[1]:
        return None
    if head.startswith(b"SQLite format 3"):
        return "is a SQLite database, not an argusdb store"
    return "is not an argusdb store (not a DuckDB database file)"


def open_error(path: str, exc: Exception) -> StoreError:
    text = first_line(exc)
    if "WAL" in str(exc) or "write-ahead" in str(exc).lower() or "replay" in str(exc).lower():
        return StoreError(f"{path}: its write-ahead log {path}.wal is damaged ({text}). The "
                          f"store itself is intact up to its last checkpoint: move the log "
                          f"aside (mv {path}.wal {path}.wal.damaged) and open it again; the "
                          f"transactions only in the log are lost, so re-ingest the newest "
                          f"runs ('argus runs {path}' lists what is there).")
    return StoreError(f"{path}: cannot open as a DuckDB store ({text}). Check that no other "
                      "process writes it, close other connections to it in this process "
                      "(a store is open read-only or read-write, not both), and that it "
                      "is an argusdb store.")


def connect_waiting(p: Path, read_only: bool, timeout_s: float,
                    before: Callable[[], None] | None = None) -> duckdb.DuckDBPyConnection:
    """Connect, waiting up to ``timeout_s`` while another process holds the file's lock;
    ``before`` is called just before each attempt (the store notes its write-ahead log's
    state there, as it is when DuckDB replays it)."""
    deadline = time.monotonic() + timeout_s
    told = False
    pause = 0.01
    while True:
        if before is not None:
            before()
        try:
            return session(duckdb.connect(str(p), read_only=read_only, config=dict(CONFIG)))
        except duckdb.Error as exc:
            text = str(exc)
            locked = "Could not set lock" in text or "Conflicting lock" in text
            if locked and time.monotonic() < deadline:
                if not told:
                    holder = text.split("Conflicting lock is held in", 1)[-1].strip() \
                        if "Conflicting lock is held in" in text else "another process"
                    sys.stderr.write(f"argus: {p} is locked by {holder}; waiting up to "
                                     f"{timeout_s:g} s (ARGUS_LOCK_TIMEOUT)\n")
                    told = True
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 1.5, 0.2)
                continue
            if locked:
                raise StoreError(f"{p}: still locked by another process after {timeout_s:g} s. "
                                 "Wait for it to finish, or raise ARGUS_LOCK_TIMEOUT (seconds)."
                                 ) from exc
            raise open_error(str(p), exc) from exc
