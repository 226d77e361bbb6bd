"""argusdb/queries/overlap/window.sql and argusdb/answers/exposure: exposed communication with
no step marker, on seeded kernel records and spans (input + query + expected rows)."""

from __future__ import annotations

import pytest

from argusdb.answers.exposure import exposure, find_period, found_steps
from argusdb.store.embedded import Store
from tests.attribution import seed


def _kernel(st: Store, run: str, name: str, i: int, a: int, b: int, stream: int) -> None:
    seed.insert(st, "kernel_launch", {"run_id": run, "kernel": name, "launch": i,
                                      "start_ns": a, "end_ns": b, "dur_ns": b - a,
                                      "stream_id": stream})


def _coll(st: Store, run: str, seq: int, a: int, b: int, nbytes: int) -> None:
    seed.collective(st, run, seq, a, b, dtype="float32", elem_bytes=4, in_nelems=nbytes // 4,
                    out_nelems=nbytes // 4, bytes=nbytes, clock="perf_counter", track="host",
                    step=-1)


@pytest.fixture
def store(store: Store) -> Store:
    """Kernel records and spans of rank 0 (on the fresh store of tests/conftest.py)."""
    st = store
    st.insert_row("program_version", {"program_version": "v1", "program": "p"})
    for run, collector in (("k0", "kineto"), ("s0", "torchdist")):
        seed.run(st, run, "v1", collector=collector, timing_clean=True, signature="none")
        st.sql("UPDATE run SET rank = 0, world_size = 2, launch_group = ? WHERE run_id = ?",
               [f"lg-{run}", run])
    # kernels, rank 0: a warm-up kernel, then 4 steps of 100 ns: mm [0,40) and gelu [40,60) on
    # stream 7, an NCCL all-reduce [50,90) on stream 9 (10 ns under gelu), and a 3 ns copy on
    # stream 8 at [85,88) that covers 3 ns more of the all-reduce
    _kernel(st, "k0", "warmup", 0, -50, -40, 7)
    for s in range(4):
        t = 100 * s
        _kernel(st, "k0", "mm", 2 * s, t, t + 40, 7)
        _kernel(st, "k0", "gelu", 2 * s + 1, t + 40, t + 60, 7)
        _kernel(st, "k0", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", s, t + 50, t + 90, 9)
        _kernel(st, "k0", "copy", s, t + 85, t + 88, 8)
    # spans, rank 0: an async 64-byte all-reduce [0,30) and a 192-byte one [40,50), 3 times
    for s in range(3):
        t = 100 * s
        _coll(st, "s0", 2 * s, t, t + 30, 64)
        _coll(st, "s0", 2 * s + 1, t + 40, t + 50, 192)
    return st


def test_window_of_kernel_records_counts_compute_on_every_stream(store: Store) -> None:
    rows = store.rows("SELECT basis, window_start_ns, window_ns, n_communication, n_compute, "
                      "compute_ns, comm_ns, overlap_ns, exposed_comm_ns FROM rank_window "
                      "WHERE run_id = 'k0'")
    # compute: 10 (warm-up) + 4 * (60 + 3); communication 4 * 40; overlap 4 * (10 + 3)
    assert rows == [{"basis": "kernels", "window_start_ns": -50, "window_ns": 440,
                     "n_communication": 4, "n_compute": 13, "compute_ns": 262,
                     "comm_ns": 160, "overlap_ns": 52, "exposed_comm_ns": 108}]


def test_window_of_spans_without_compute_spans_is_all_exposed(store: Store) -> None:
    rows = store.rows("SELECT basis, n_compute, comm_ns, overlap_ns, exposed_comm_ns "
                      "FROM rank_window WHERE run_id = 's0'")
    assert rows == [{"basis": "spans", "n_compute": 0, "comm_ns": 120, "overlap_ns": 0,
                     "exposed_comm_ns": 120}]


def test_busy_pieces_are_disjoint_per_kind(store: Store) -> None:
    rows = store.rows("SELECT what, start_ns, end_ns FROM rank_busy WHERE run_id = 'k0' "
                      "AND start_ns < 100 ORDER BY what, start_ns")
    assert rows == [
        {"what": "communication", "start_ns": 50, "end_ns": 90},
        {"what": "compute", "start_ns": -50, "end_ns": -40},
        {"what": "compute", "start_ns": 0, "end_ns": 60},
        {"what": "compute", "start_ns": 85, "end_ns": 88},
        {"what": "overlap", "start_ns": 50, "end_ns": 60},
        {"what": "overlap", "start_ns": 85, "end_ns": 88}]


def test_steps_found_from_the_busiest_stream_after_the_warm_up(store: Store) -> None:
    f = found_steps(store, "k0", "kernels")
    assert (f["from"], f["period"], f["offset"], f["repeats"]) == ("found", 2, 1, 4)
    assert f["sequence"] == ["mm", "gelu"]
    # step k: [100k, 100(k+1)); the last one to the window's end (the all-reduce's, 390)
    assert [(s["step"], s["step_ns"], s["comm_ns"], s["overlap_ns"], s["exposed_comm_ns"])
            for s in f["steps"]] == [(0, 100, 40, 13, 27), (1, 100, 40, 13, 27),
                                     (2, 100, 40, 13, 27), (3, 90, 40, 13, 27)]


def test_steps_found_from_collective_sizes(store: Store) -> None:
    f = found_steps(store, "s0", "spans")
    assert (f["period"], f["repeats"], f["sequence"]) == (2, 3, ["allreduce:64",
                                                                 "allreduce:192"])
    assert [s["exposed_comm_ns"] for s in f["steps"]] == [40, 40, 40]
    assert [s["step_ns"] for s in f["steps"]] == [100, 100, 50]  # the last ends at 250


def test_exposure_picks_kernel_records_and_reports_found_steps(store: Store) -> None:
    by = exposure(store, ["lg-k0"], {})
    d = by[0]
    assert d["chosen"]["basis"] == "kernels" and "NCCL kernels" in d["why_basis"]
    assert d["steps"]["n_steps"] == 3 and d["steps"]["median_exposed_comm_ns"] == 27


def test_marked_steps_are_read_and_not_searched(store: Store) -> None:
    marked = {0: {"n_steps": 5, "exposed_comm_ns": 11.0, "run_id": "s0"}}
    d = exposure(store, ["lg-s0"], marked)[0]
    assert d["steps"] == {"from": "marked", "n_steps": 5, "median_exposed_comm_ns": 11.0}
    assert d["upper_bound"] and d["chosen"]["basis"] == "spans"


@pytest.mark.parametrize(("seq", "want"), [
    (list("wabcabcabcabcxy"), (1, 3)),  # warm-up before, epilogue after
    (list("abcabcab"), None),  # fewer than 3 repeats
    (list("aaaaaa"), (0, 1)),
    (list("abababababab"), (0, 2)),  # not its multiples 4 or 6
    ([], None),
])
def test_find_period(seq: list[str], want: tuple[int, int] | None) -> None:
    assert find_period(seq) == want
