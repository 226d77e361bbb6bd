"""Nsight Systems SQLite export: the public CloverLeaf recording (4 A100s, schema 3.13.2)."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from argusdb.collectors import detect
from argusdb.collectors.base import EVIDENCE_SCHEMA, KERNEL_LAUNCH_SCHEMA
from argusdb.collectors.nsys import NsysSqliteReader
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.collectors.batches import tables
from tests.collectors.refusal import refused
from tests.conftest import DATA

EXPORT = DATA / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"


def test_kernels_devices_and_export_metadata() -> None:
    reader = detect(EXPORT)
    assert isinstance(reader, NsysSqliteReader)
    art = reader.read(EXPORT)
    assert (art.export_schema, art.tool_version) == ("3.13.2", "2024.5.1.113")
    assert art.target == "sm_80" and art.device["name"] == "NVIDIA A100-SXM4-80GB"
    gpus = art.device["devices"]
    assert len(gpus) == 4 and [g["id"] for g in gpus] == [0, 1, 2, 3]
    assert [g["ran_kernels"] for g in gpus] == [True, False, False, False]
    assert gpus[0]["busLocation"] == "0000:c1:00.0" and gpus[0]["smCount"] == 108
    assert art.interference.signature() == "activity_tracing"
    t = tables(art)
    assert t["kernel_launch"].schema == KERNEL_LAUNCH_SCHEMA
    assert t["evidence"].schema == EVIDENCE_SCHEMA
    rows = t["kernel_launch"].to_pylist()
    assert len(rows) == 1312 and t["evidence"].num_rows == 1312
    assert {r["launch_api"] for r in rows} == {"cudaLaunchKernel_v7000"}
    assert {r["device_id"] for r in rows} == {0}
    first = rows[0]
    assert first["kernel"] == ("void clover::par_ranged2d_kernel<build_field(global_variables &)"
                               "::[lambda(int, int) (instance 1)]>(clover::Range2d, T1)")
    assert (first["start_ns"], first["end_ns"], first["dur_ns"]) == (533338240, 534705884,
                                                                     1367644)
    assert (first["grid_x"], first["block_x"], first["registers"]) == (115426, 256, 32)
    assert first["correlation_id"] == 452 and first["launch"] == 0
    # launch indices run 0..n-1 per kernel name, in start order
    per_name = Counter(r["kernel"] for r in rows)
    for name, n in per_name.items():
        assert sorted(r["launch"] for r in rows if r["kernel"] == name) == list(range(n))
    ev = t["evidence"].to_pylist()
    assert ev[0]["value"] == 1367644.0 and ev[0]["unit"] == "ns" and ev[0]["launch"] == "0"


def test_the_launching_call_is_stored_with_its_time_thread_and_rowid() -> None:
    import sqlite3

    rows = tables(NsysSqliteReader().read(EXPORT))["kernel_launch"].to_pylist()
    # Oracle: the export's runtime rows, read with sqlite3 directly.
    con = sqlite3.connect(f"file:{EXPORT}?mode=ro&immutable=1", uri=True)
    calls = {r[0]: r[1:] for r in con.execute(
        "SELECT r.rowid, r.start, r.\"end\", r.globalTid, r.correlationId, s.value FROM "
        "CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s ON s.id = r.nameId")}
    con.close()
    assert all(r["api_src_row"] is not None for r in rows)
    for r in rows:
        start, end, gtid, corr, name = calls[r["api_src_row"]]
        assert corr == r["correlation_id"] and name == r["launch_api"]
        assert (r["api_start_ns"], r["api_dur_ns"]) == (start, end - start)
        assert (r["api_pid"], r["api_tid"]) == ((gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF)
        # the call starts before its kernel (one clock for both)
        assert start < r["start_ns"]
    # the decoded process ID is the application's own (PROCESSES.pid of cuda-cloverleaf)
    assert {r["api_pid"] for r in rows} == {1701896}


def test_small_batches_stream_the_same_rows() -> None:
    art = NsysSqliteReader(batch_rows=100).read(EXPORT)
    sizes = [b.num_rows for t, b in art.batches() if t == "kernel_launch"]
    assert max(sizes) == 100 and sum(sizes) == 1312


def test_ingest_records_the_run(store: Store) -> None:
    res = ingest_path(store, EXPORT)
    assert res.rows == {"evidence": 1312, "kernel_launch": 1312}
    run = store.rows("SELECT tool, tool_version, export_schema, device, timing_clean, "
                     "json_array_length(device_info->'devices') AS gpus FROM run")[0]
    assert run == {"tool": "Nsight Systems", "tool_version": "2024.5.1.113",
                   "export_schema": "3.13.2", "device": "NVIDIA A100-SXM4-80GB",
                   "timing_clean": True, "gpus": 4}


def test_sqlite_that_is_not_an_export(tmp_path: Path, store: Store) -> None:
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    err = refused(store, db)
    assert err.path == str(db) and "not an Nsight Systems export" in err.problem
    assert "nsys export --type sqlite" in err.fix


def test_export_without_kernel_table(tmp_path: Path, store: Store) -> None:
    db = tmp_path / "nokernels.sqlite"
    shutil.copy(EXPORT, db)
    with sqlite3.connect(db) as con:
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    err = refused(store, db, "no CUPTI_ACTIVITY_KIND_KERNEL table")
    assert "--trace=cuda" in err.fix


def test_truncated_export(tmp_path: Path, store: Store) -> None:
    db = tmp_path / "cut.sqlite"
    db.write_bytes(EXPORT.read_bytes()[:600_000])
    err = refused(store, db)
    assert err.path == str(db) and "truncated or corrupt" in err.fix


def test_export_with_missing_kernel_columns(tmp_path: Path, store: Store) -> None:
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
        con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER)")
    err = refused(store, db, r"lacks columns \['deviceId'")
    assert err.path == str(db)
