"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``).

Read with Python's :mod:`sqlite3` (read-only, immutable), never DuckDB: the store's engine must
not depend on an extension to read a tool's output.

What it reads:

- ``CUPTI_ACTIVITY_KIND_KERNEL`` joined with ``StringIds`` → ``kernel_launch`` rows: the kernel
  name is ``demangledName`` (a Triton kernel's name is its ``@triton.jit`` function name, so it
  binds to its region), start/end/duration in ns as recorded, grid, block, registers per thread,
  static + dynamic shared memory, device, stream, correlation ID; the launching API call
  (``cudaLaunchKernel_v7000``, ``cuLaunchKernel``, ...) comes from ``CUPTI_ACTIVITY_KIND_RUNTIME``
  through the correlation ID within the same process (the first such call, by start), with its
  start, duration, process and thread (``globalTid``: pid = ``globalTid >> 24 & 0xFFFFFF``, tid =
  ``globalTid & 0xFFFFFF``, as the export's documentation decodes it) and its ``rowid`` as
  lineage (``api_src_row``). One ``evidence`` row per launch:
  ``duration`` in ns, scope ``launch=<index>``.
- Launch index: 0-based per kernel name over the whole run in start order (device as the tie
  break). An export may hold several GPUs; evidence has no device coordinate, so a run-wide index
  keeps ``(kernel, launch)`` unique. ``kernel_launch.device_id`` says where each launch ran.
- ``TARGET_INFO_GPU`` → ``device_info`` (every GPU of the export, with the ones that ran kernels
  marked) and the target (``computeMajor/Minor`` → ``sm_XY``) of the GPUs that ran kernels;
  ``META_DATA_EXPORT`` → ``export_schema`` (``EXPORT_SCHEMA_VERSION``) and ``tool_version``
  (``EXPORT_PRODUCT_VERSION``: the Nsight Systems that wrote the export).

Checks before anything is stored (one SQL pass each): every kernel's ``start``/``end`` are
integers (SQLite would hold a string), non-negative, ``end >= start`` and shorter than 7 days;
grid, block, registers, shared memory, device, stream and correlation non-negative integers;
no kernel row repeats another (same start, end, device, stream, correlation ID and name); the
GPUs that ran kernels have a known CUDA target.

Rows are fetched with ``fetchmany`` in batches of ``batch_rows``; sqlite sorts on disk when it
must, so memory is bounded by the batch size.

Example:
    >>> art = NsysSqliteReader().read(Path("report.sqlite"))
    >>> sorted({table for table, batch in art.batches()})
    ['evidence', 'kernel_launch']
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from argusdb.collectors.base import (
    Artefact,
    Interference,
    evidence_batch,
    kernel_launch_batch,
    normalize_target,
)
from argusdb.collectors.validate import MAX_INTERVAL_NS, known_target
from argusdb.errors import InputError

ADAPTER_VERSION = "nsys.sqlite/1"
BATCH_ROWS = 4096
_KERNEL_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                   "demangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                   "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")
_META_KEYS = ("EXPORT_PRODUCT_NAME", "EXPORT_PRODUCT_VERSION", "EXPORT_SCHEMA_VERSION",
              "EXPORT_TIME_UTC", "EXPORT_PLATFORM", "EXPORT_PARAM_TIME_NORMALIZE")
_FIX = "export the report with 'nsys export --type sqlite REPORT.nsys-rep'"
_EDITED = f"the export was edited or is corrupt; {_FIX}"
#: (what is wrong, SQL that returns the rowid of the first kernel row where it is).
_KERNEL_CHECKS = (
    ("'start' or 'end' is not an integer",
     "SELECT rowid, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE typeof(start) <> 'integer' "
     "OR typeof(\"end\") <> 'integer' LIMIT 1"),
    ("'start' is negative",
     "SELECT rowid, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < 0 LIMIT 1"),
    ("ends before it starts",
     "SELECT rowid, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE \"end\" < start LIMIT 1"),
    (f"lasts more than 7 days ({MAX_INTERVAL_NS} ns): not a measurement",
     f"SELECT rowid, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL "
     f"WHERE \"end\" - start > {MAX_INTERVAL_NS} LIMIT 1"),
    ("a grid, block, register, shared-memory, device or stream field is not a non-negative "
     "integer",
     "SELECT rowid, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE " + " OR ".join(
         f"typeof({c}) NOT IN ('integer', 'null') OR {c} < 0" for c in (
             "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
             "staticSharedMemory", "dynamicSharedMemory", "deviceId", "streamId",
             "correlationId")) + " LIMIT 1"),
    ("repeats another kernel row exactly (same start, end, device, stream, correlation ID and "
     "name): a tool records a launch once",
     "SELECT max(rowid), start, end FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY start, \"end\", "
     "deviceId, streamId, correlationId, demangledName HAVING count(*) > 1 LIMIT 1"),
)


def connect(path: Path) -> sqlite3.Connection:
    """Open an export read-only; ``immutable`` so that no journal or lock file is touched."""
    return sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1", uri=True)


def _check_size(path: Path) -> None:
    """Refuse a database file whose length is not what its header says (pages of the header's
    size times its page count): a copy cut short, even by one byte, that SQLite itself would
    read without a word where the missing pages hold no table it is asked about."""
    with open(path, "rb") as fh:
        head = fh.read(100)
        size = os.fstat(fh.fileno()).st_size
    if len(head) < 100:
        raise InputError(str(path), f"is {size} bytes, shorter than an SQLite header",
                         f"the file is truncated; {_FIX}")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    counted = head[24:28] == head[92:96] and pages > 0   # the header's page count is current
    want = page * pages if counted else None
    if page < 512 or page & (page - 1) or size % page or (want is not None and size != want):
        expect = f"{want:,} bytes ({pages:,} pages of {page:,})" if want is not None \
            else f"a whole number of {page:,}-byte pages"
        raise InputError(str(path), f"is truncated or padded: {size:,} bytes where its SQLite "
                         f"header says {expect}", f"the file is truncated or corrupt; {_FIX}")


class NsysSqliteReader:
    """Nsight Systems SQLite export: kernels, runtime calls, GPUs, export metadata."""

    kind = "nsys.sqlite"

    def __init__(self, batch_rows: int = BATCH_ROWS) -> None:
        self.batch_rows = batch_rows

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(b"SQLite format 3\x00")

    def read(self, path: Path) -> Artefact:
        _check_size(path)
        try:
            with closing(connect(path)) as con:
                return self._read(path, con)
        except sqlite3.DatabaseError as exc:
            raise InputError(str(path), f"cannot be read as an SQLite database ({exc})",
                             f"the file is truncated or corrupt; {_FIX}") from exc

    def _read(self, path: Path, con: sqlite3.Connection) -> Artefact:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "META_DATA_EXPORT" not in tables and "StringIds" not in tables:
            raise InputError(str(path), "is an SQLite database but not an Nsight Systems export "
                             "(no META_DATA_EXPORT or StringIds table)", _FIX)
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"):
            if t not in tables:
                raise InputError(str(path), f"has no {t} table: the report traced no CUDA kernels",
                                 "profile with 'nsys profile --trace=cuda' and export again")
        cols = {r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
        missing = [c for c in _KERNEL_COLUMNS if c not in cols]
        if missing:
            raise InputError(str(path), f"CUPTI_ACTIVITY_KIND_KERNEL lacks columns {missing}",
                             f"{_FIX} (export schema 3.x)")
        for problem, sql in _KERNEL_CHECKS:
            bad = con.execute(sql).fetchone()
            if bad is not None:
                raise InputError(str(path), f"CUPTI_ACTIVITY_KIND_KERNEL row {bad[0]} (start "
                                 f"{bad[1]!r}, end {bad[2]!r}): {problem}", _EDITED)
        meta_rows: dict[str, str] = {}
        if "META_DATA_EXPORT" in tables:
            meta_rows = dict(con.execute("SELECT name, value FROM META_DATA_EXPORT"))
        per_device = dict(con.execute("SELECT deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                      "GROUP BY deviceId"))
        if not per_device:
            raise InputError(str(path), "has an empty CUPTI_ACTIVITY_KIND_KERNEL table",
                             "profile a run that launches kernels with --trace=cuda")
        names = [r[0] for r in con.execute(
            "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS s ON s.id = k.demangledName ORDER BY 1")]
        device, target = _gpus(path, con, tables, set(per_device))
        meta: dict[str, Any] = {k: meta_rows[k] for k in _META_KEYS if k in meta_rows}
        if "PROCESSES" in tables:  # the application: the process(es) that launched kernels
            apps = sorted({str(r[0]) for r in con.execute(
                "SELECT DISTINCT p.name FROM PROCESSES AS p WHERE p.globalPid IN "
                "(SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL)") if r[0]})
            meta["application"] = apps[0] if len(apps) == 1 else (apps or None)
        meta.update(kernels=sum(per_device.values()),
                    kernels_per_device={str(k): v for k, v in sorted(per_device.items())},
                    launch_index="per kernel name over the run, in start order",
                    has_runtime="CUPTI_ACTIVITY_KIND_RUNTIME" in tables)
        if "TARGET_INFO_SESSION_START_TIME" in tables:
            row = con.execute("SELECT * FROM TARGET_INFO_SESSION_START_TIME LIMIT 1").fetchone()
            if row:
                meta["session_start"] = list(row)
        has_runtime = "CUPTI_ACTIVITY_KIND_RUNTIME" in tables
        return Artefact(
            path=str(path), collector="nsys", kind=self.kind, tool="Nsight Systems",
            adapter_version=ADAPTER_VERSION, batches=lambda: self._batches(path, has_runtime),
            tool_version=meta_rows.get("EXPORT_PRODUCT_VERSION"),
            export_schema=meta_rows.get("EXPORT_SCHEMA_VERSION"),
            interference=Interference(activity_tracing=True), target=target, device=device,
            kernels=names, meta=meta, rows_hint=2 * sum(per_device.values()))

    def _batches(self, path: Path, has_runtime: bool) -> Iterator[tuple[str, pa.RecordBatch]]:
        call = ("rn.value, r.start, r.\"end\" - r.start, (r.globalTid >> 24) & 16777215, "
                "r.globalTid & 16777215, r.rowid") if has_runtime else "NULL, " * 5 + "NULL"
        # One API call per (process, correlation ID), the first one: a kernel is not
        # duplicated when an export records several calls under one correlation ID.
        with_api = ("WITH api AS (SELECT rowid AS rid, correlationId, globalTid >> 24 AS proc, "
                    "row_number() OVER (PARTITION BY correlationId, globalTid >> 24 "
                    "ORDER BY start, rowid) AS nth FROM CUPTI_ACTIVITY_KIND_RUNTIME) "
                    ) if has_runtime else ""
        join = ("LEFT JOIN api AS a ON a.correlationId = k.correlationId "
                "AND a.proc = (k.globalPid >> 24) AND a.nth = 1 "
                "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.rowid = a.rid "
                "LEFT JOIN StringIds AS rn ON rn.id = r.nameId") if has_runtime else ""
        sql = (f"{with_api}SELECT s.value, k.start, k.end, k.correlationId, {call}, "
               "k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread, "
               "k.staticSharedMemory + k.dynamicSharedMemory, k.deviceId, k.streamId "
               "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName "
               f"{join} ORDER BY k.start, k.deviceId, k.correlationId")
        cols = ("kernel", "start_ns", "end_ns", "correlation_id", "launch_api", "api_start_ns",
                "api_dur_ns", "api_pid", "api_tid", "api_src_row", "grid_x", "grid_y", "grid_z",
                "block_x", "block_y", "block_z", "registers", "shared_bytes", "device_id",
                "stream_id")
        seen: dict[str, int] = {}
        ordinal = 0
        try:
            with closing(connect(path)) as con:
                cur = con.execute(sql)
                while rows := cur.fetchmany(self.batch_rows):
                    kl: dict[str, list[Any]] = {c: list(v) for c, v in
                                                zip(cols, zip(*rows, strict=True), strict=True)}
                    launches = []
                    for name in kl["kernel"]:
                        idx = seen.get(name, 0)
                        seen[name] = idx + 1
                        launches.append(idx)
                    kl["launch"] = launches
                    kl["dur_ns"] = [e - s for s, e in zip(kl["start_ns"], kl["end_ns"],
                                                          strict=True)]
                    n = len(rows)
                    yield "evidence", evidence_batch({
                        "kernel": kl["kernel"], "launch": [str(i) for i in launches],
                        "signal": ["duration"] * n, "value": [float(d) for d in kl["dur_ns"]],
                        "unit": ["ns"] * n, "src_row": list(range(ordinal, ordinal + n))})
                    ordinal += n
                    yield "kernel_launch", kernel_launch_batch(kl)
        except sqlite3.DatabaseError as exc:
            raise InputError(str(path), f"cannot be read as an SQLite database ({exc})",
                             f"the file is truncated or corrupt; {_FIX}") from exc


def _gpus(path: Path, con: sqlite3.Connection, tables: set[str], used: set[int]
          ) -> tuple[dict[str, Any], str | None]:
    """Every GPU of the export as facts; name and target of those that ran kernels."""
    if "TARGET_INFO_GPU" not in tables:
        return {"devices": [], "used_device_ids": sorted(used)}, None
    cur = con.execute("SELECT * FROM TARGET_INFO_GPU ORDER BY id")
    names = [d[0] for d in cur.description]
    gpus = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    for g in gpus:
        g["ran_kernels"] = g.get("id") in used
        if g.get("computeMajor") is not None:
            g["target"] = known_target(path, f"{g['computeMajor']}.{g.get('computeMinor', 0)}",
                                       "compute capability (TARGET_INFO_GPU)") \
                if g["ran_kernels"] else normalize_target(f"{g['computeMajor']}."
                                                          f"{g.get('computeMinor', 0)}")
    ran = [g for g in gpus if g["ran_kernels"]]
    device: dict[str, Any] = {"devices": gpus, "used_device_ids": sorted(used)}
    run_names = {g.get("name") for g in ran}
    if len(run_names) == 1:
        device["name"] = run_names.pop()
    targets = {g.get("target") for g in ran}
    target = targets.pop() if len(targets) == 1 else None
    return device, target
