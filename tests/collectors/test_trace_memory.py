"""Reading a Kineto trace takes memory bounded by the batch size, not by the file size.

The traces are the real kernel events of a public trace replicated (bench/synth_kineto.py);
bench/bench_trace_memory.py measures the same at 10x-300x with RSS as well.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from argusdb.collectors.kineto import KinetoTraceReader
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
