"""Collectives and spans of a distributed rank's Kineto trace: the rows, and the memory they take.

``DistRows`` holds a rank's spans column-wise in Arrow; the rows it writes must be the ones the
row-wise reader wrote (recorded in ``tests/data/kineto/comms_rows``), and what it holds must be
tens of bytes per span, not the ~1 KB of a Python dict per span.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pyarrow as pa
import pytest

import argusdb.collectors.comms as comms
from argusdb.collectors.kineto.comms import read_comms
from bench.synth_kineto import SRC, write_replicated_trace
from tests.conftest import DATA

TRACE = DATA / "gpu" / "xlayer" / "xl-overlap-profiler-1" / \
    "tp_block.overlap.profiler.r1.rank0.kineto.json.gz"
EXPECTED = DATA / "kineto" / "comms_rows"


def _tables(path: Path, batch_rows: int) -> dict[str, pa.Table]:
    rows = read_comms(path, 1)
    by: dict[str, list[pa.RecordBatch]] = {}
    for table, batch in rows.batches(1000, batch_rows):
        by.setdefault(table, []).append(batch)
    return {t: pa.Table.from_batches(bs) for t, bs in by.items()}


@pytest.mark.parametrize(("chunk_rows", "batch_rows"), [(comms.CHUNK_ROWS, 50_000), (64, 100)])
def test_rows_are_the_row_wise_readers(monkeypatch: pytest.MonkeyPatch, chunk_rows: int,
                                       batch_rows: int) -> None:
    # small chunks and batches: rows cross Arrow chunks (one dictionary each) and batches
    monkeypatch.setattr(comms, "CHUNK_ROWS", chunk_rows)
    got = _tables(TRACE, batch_rows)
    assert sorted(got) == ["collective", "evidence", "trace_span"]
    for table, actual in got.items():
        expected = pa.ipc.open_file(EXPECTED / f"{table}.arrow").read_all()
        assert actual.schema == expected.schema
        assert actual.to_pylist() == expected.to_pylist(), table
    spans = got["trace_span"]
    assert spans.num_rows == 1045 and spans["step"].null_count == 1045 - 886


def _held_and_peak(path: Path) -> tuple[int, int, int]:
    """Bytes held once the trace is read (Python objects and Arrow buffers), the peak of traced
    Python and NumPy memory while it is numbered and written, and the spans."""
    arrow_before = pa.total_allocated_bytes()
    tracemalloc.start()
    try:
        rows = read_comms(path, 0)
        held = tracemalloc.get_traced_memory()[0] + pa.total_allocated_bytes() - arrow_before
        assert sum(b.num_rows for t, b in rows.batches(0, 4096) if t == "trace_span") \
            == len(rows.spans)
        return held, tracemalloc.get_traced_memory()[1], len(rows.spans)
    finally:
        tracemalloc.stop()


def test_memory_per_span_is_tens_of_bytes(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.setattr(comms, "CHUNK_ROWS", 1024)
    for _ in read_comms(SRC, 0).batches(0):  # warm up: Arrow's compute kernels, NumPy
        pass
    small, big = tmp_path / "x8.json", tmp_path / "x32.json"
    write_replicated_trace(SRC, small, 8)  # every event: 367 host ops and annotations each
    write_replicated_trace(SRC, big, 32)
    held_small, peak_small, n_small = _held_and_peak(small)
    held_big, peak_big, n_big = _held_and_peak(big)
    assert (n_small, n_big) == (367 * 8, 367 * 32)
    # a Python dict per span held ~600 bytes traced (~1 KB of RSS); columns hold ~60
    per_span = (held_big - held_small) / (n_big - n_small)
    assert 0 < per_span < 100, per_span
    assert (peak_big - peak_small) / (n_big - n_small) < 150
