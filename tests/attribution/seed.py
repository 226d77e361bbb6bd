"""Seed rows for SQL-module tests (as Perfetto tests its standard library: seed rows + query +
expected rows). Rows go straight into the store's tables, without collectors."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.store.embedded import Store

_NOW = datetime(2026, 11, 29, tzinfo=UTC).replace(tzinfo=None)


def insert(store: Store, table: str, row: dict[str, Any]) -> None:
    """Insert one row (plain INSERT: tables without keys reject INSERT OR IGNORE)."""
    cols = ", ".join(row)
    store.sql(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' for _ in row)})",
              list(row.values()))


def version(store: Store, version_id: str, program: ProgramSource, **extra: Any) -> None:
    """A program version with the region spans of ``program``."""
    store.insert_row("program_version", {
        "program_version": version_id, "program": program.stem, "source_name": program.name,
        "source_sha256": program.sha256, "source_text": program.text, "options": {},
        "target": "sm_90", **extra})
    for r in parse_regions(program):
        store.insert_row("region_span", {
            "program_version": version_id, "region_id": r.region_id, "kernel": r.kernel,
            "name": r.name, "start_line": r.start_line, "end_line": r.end_line})


def run(store: Store, run_id: str, version_id: str, collector: str = "ncu",
        timing_clean: bool = False, signature: str = "replay(38 passes, full)") -> int:
    """A run (and its collect task); returns its run_seq."""
    seq = store.next_run_seq()
    store.insert_row("task", {"task_id": f"t-{run_id}", "kind": "collect", "status": "done",
                              "finished_at": _NOW})
    store.insert_row("run", {
        "run_id": run_id, "run_seq": seq, "program_version": version_id,
        "task_id": f"t-{run_id}", "collector": collector, "kind": f"{collector}.seed",
        "artefact_name": f"{run_id}.seed", "artefact_sha256": run_id, "adapter_version": "seed",
        "signature": signature, "timing_clean": timing_clean,
        "activity_tracing": timing_clean, "torch_profiler": False,
        "counter_replay": not timing_clean, "pc_sampling": False, "instrumentation": False,
        "forced_wait": False, "serialized": False, "device": "NVIDIA H200",
        "ingested_at": _NOW})
    return seq


def evidence(store: Store, run_id: str, rows: list[dict[str, Any]]) -> None:
    """Observed rows of a run: dicts with kernel, signal, value and optional pc/file/line."""
    got = store.sql("SELECT run_seq, program_version, task_id FROM run WHERE run_id = ?",
                    [run_id]).fetchone()
    assert got is not None
    seq, ver, task = got
    for i, r in enumerate(rows):
        row = {"evidence_id": seq * 2**32 + i, "program_version": ver, "task_id": task,
               "run_id": run_id, "region_id": None, "launch": "all", "cta": "all", "sm": "all",
               "warp": "all", "warp_role": "all", "loop_iter": "all", "unit": "count",
               "src_row": i}
        row.update(r)
        insert(store, "observed_evidence", row)


def rows(store: Store, table: str, run_id: str, rows: list[dict[str, Any]]) -> None:
    """Rows of another table (instruction, inline_site, kernel_launch) of a run."""
    for r in rows:
        insert(store, table, {"run_id": run_id, **r})


def collective(store: Store, run_id: str, seq: int, start_ns: int, end_ns: int,
               **extra: Any) -> None:
    """One collective of a run (rank 0's 1000-byte bfloat16 all-reduce on a CUDA-event clock,
    unless ``extra`` says otherwise)."""
    insert(store, "collective", {
        "run_id": run_id, "rank": 0, "pg": "0", "pg_ranks": "[0, 1]", "seq": seq,
        "op": "allreduce", "dtype": "bfloat16", "elem_bytes": 2, "in_nelems": 500,
        "out_nelems": 500, "group_size": 2, "bytes": 1000, "start_ns": start_ns,
        "end_ns": end_ns, "dur_ns": end_ns - start_ns, "clock": "cuda_event",
        "track": "stream:1", "kernel": None, "step": None, "src_row": seq, **extra})
