"""Reading a Kineto trace takes memory bounded by the batch size, not by the file size.

The traces are the real kernel events of a public trace replicated (bench/synth_kineto.py);
bench/bench_trace_memory.py measures the same at 10x-300x with RSS as well.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np

from argusdb.collectors.kineto import KinetoTraceReader
from argusdb.collectors.kineto.hostops import LaunchIndex
from bench.synth_kineto import SRC, write_replicated_trace


def _traced_peak(path: Path, batch_rows: int) -> tuple[int, int]:
    """Peak traced Python memory (bytes) of reading ``path`` whole, and the rows read."""
    tracemalloc.start()
    try:
        art = KinetoTraceReader(batch_rows=batch_rows).read(path)
        rows = sum(b.num_rows for _, b in art.batches())
        return tracemalloc.get_traced_memory()[1], rows
    finally:
        tracemalloc.stop()


def test_peak_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    # Warm up: the first Arrow conversion imports pandas inside pyarrow (tens of MB of modules).
    for _ in KinetoTraceReader().read(SRC).batches():
        pass
    small, big = tmp_path / "x15.json", tmp_path / "x60.json"
    write_replicated_trace(SRC, small, 15, only=("kernel",))
    stats = write_replicated_trace(SRC, big, 60, only=("kernel",))
    assert stats["kernels"] == 79 * 60 and stats["bytes"] > 3_000_000
    peak_small, rows_small = _traced_peak(small, batch_rows=256)
    peak_big, rows_big = _traced_peak(big, batch_rows=256)
    assert (rows_small, rows_big) == (2 * 79 * 15, 2 * 79 * 60)  # launch + duration per kernel
    # 4x the file, not more memory; and far below the file's size.
    assert peak_big < 1.5 * peak_small + 64 * 1024
    assert peak_big < stats["bytes"] / 8


def test_resolved_index_keeps_only_the_kernels_calls() -> None:
    ix = LaunchIndex()
    ix.add_cpu_op(1, 1, 0, 100, "aten::mm")
    ix.add_runtime(1, 1, 10, 7, "cudaLaunchKernel", dur_ns=4, src_row=3)
    ix.add_runtime(1, 1, 20, 8, "cudaMemcpyAsync", dur_ns=2, src_row=5)
    full, kept = ix.resolve(), ix.resolve(keep=np.array([7]))
    assert full.lookup([7, 8]).launch_api == ["cudaLaunchKernel", "cudaMemcpyAsync"]
    assert kept.lookup([7, 8]).launch_api == ["cudaLaunchKernel", None]
    assert kept.lookup([7]).columns() == full.lookup([7]).columns()


def _held_after_batches(path: Path) -> int:
    """Traced bytes an artefact still holds once its batches were read (the scan's state)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        art = KinetoTraceReader(batch_rows=256).read(path)
        assert sum(b.num_rows for _, b in art.batches()) > 0
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # passes after the first reuse the resolved index: same launching calls and host ops
    again = [[b.to_pydict() for t, b in art.batches() if t == "kernel_launch"] for _ in (1, 2)]
    assert again[0] == again[1]
    return held


def test_raw_host_op_index_is_let_go(tmp_path: Path) -> None:
    for _ in KinetoTraceReader().read(SRC).batches():
        pass
    small, big = tmp_path / "x4.json", tmp_path / "x16.json"
    write_replicated_trace(SRC, small, 4)  # every event: 331 runtime calls, 359 cpu ops each
    write_replicated_trace(SRC, big, 16)
    per_replica = (_held_after_batches(big) - _held_after_batches(small)) / 12
    # the raw index stayed: 29.4 KB per replica (56 B per runtime call, 32 per cpu op); the
    # resolved one keeps the 79 calls that launched a kernel: 5.1 KB
    assert per_replica < 10_000, per_replica
