"""argusdb/queries/intervals and argusdb/queries/distributed: seed rows + query + expected rows."""

from __future__ import annotations

import pytest

from argusdb.store.embedded import Store
from tests.attribution import seed


def _span(st: Store, run: str, kind: str, role: str, name: str, a: int, b: int,
          step: int | None = None, i: int = 0) -> None:
    seed.insert(st, "trace_span", {"run_id": run, "rank": None, "kind": kind, "role": role,
                                   "name": name, "track": "stream:0", "step": step,
                                   "start_ns": a, "end_ns": b, "dur_ns": b - a,
                                   "clock": "cuda_event", "src_row": i})


def _coll(st: Store, run: str, rank: int, seq: int, a: int, b: int, op: str = "allreduce",
          step: int | None = None) -> None:
    seed.collective(st, run, seq, a, b, rank=rank, op=op, step=step)


@pytest.fixture
def store(store: Store) -> Store:
    """Two ranks' spans and collectives (on the fresh store of tests/conftest.py)."""
    st = store
    st.insert_row("program_version", {"program_version": "v1", "program": "p"})
    for rank, run in enumerate(("r0", "r1")):
        seed.run(st, run, "v1", collector="torchdist", timing_clean=True, signature="none")
        st.sql("UPDATE run SET rank = ?, world_size = 2, launch_group = 'lg' WHERE run_id = ?",
               [rank, run])
    # rank 0: compute [0,100) and [150,300); communication [80,200) and [290,320); step [0,400)
    _span(st, "r0", "span", "compute", "mlp", 0, 100, 0, 0)
    _span(st, "r0", "span", "compute", "mlp", 150, 300, 0, 1)
    _span(st, "r0", "step", "step", "step", 0, 400, 0, 2)
    _coll(st, "r0", 0, 0, 80, 200, step=0)
    _coll(st, "r0", 0, 1, 290, 320, step=0)
    # rank 1: the same instances on a clock 1000 ns behind, ending 10 and 30 ns off
    _coll(st, "r1", 1, 0, 1050, 1210)
    _coll(st, "r1", 1, 1, 1295, 1350)
    return st


def test_union_merges_overlapping_and_touching(store: Store) -> None:
    rows = store.rows("SELECT start_ns, end_ns, dur_ns, n_intervals FROM "
                      "interval_merge('compute', 'communication') WHERE run_id = 'r0' "
                      "ORDER BY start_ns")
    assert rows == [{"start_ns": 0, "end_ns": 320, "dur_ns": 320, "n_intervals": 4}]
    rows = store.rows("SELECT start_ns, end_ns FROM interval_union('compute') "
                      "WHERE run_id = 'r0' ORDER BY start_ns")
    assert rows == [{"start_ns": 0, "end_ns": 100}, {"start_ns": 150, "end_ns": 300}]


def test_intersect_and_exposed(store: Store) -> None:
    rows = store.rows("SELECT start_ns, end_ns FROM interval_intersect('communication', "
                      "'compute') WHERE run_id = 'r0' ORDER BY start_ns")
    assert rows == [{"start_ns": 80, "end_ns": 100}, {"start_ns": 150, "end_ns": 200},
                    {"start_ns": 290, "end_ns": 300}]
    rows = store.rows("SELECT ordinal, dur_ns, covered_ns, exposed_ns FROM "
                      "interval_exposed('collective', 'compute') WHERE run_id = 'r0' "
                      "ORDER BY ordinal")
    assert rows == [{"ordinal": 0, "dur_ns": 120, "covered_ns": 70, "exposed_ns": 50},
                    {"ordinal": 1, "dur_ns": 30, "covered_ns": 10, "exposed_ns": 20}]


def test_span_join_pairs_each_overlap(store: Store) -> None:
    rows = store.rows("SELECT a_ordinal, b_ordinal, start_ns, end_ns FROM "
                      "interval_span_join('collective', 'span') WHERE run_id = 'r0' "
                      "ORDER BY start_ns")
    assert rows == [{"a_ordinal": 0, "b_ordinal": 0, "start_ns": 80, "end_ns": 100},
                    {"a_ordinal": 0, "b_ordinal": 1, "start_ns": 150, "end_ns": 200},
                    {"a_ordinal": 1, "b_ordinal": 1, "start_ns": 290, "end_ns": 300}]


def test_step_overlap(store: Store) -> None:
    rows = store.rows("SELECT step, step_ns, compute_ns, comm_ns, overlap_ns, exposed_comm_ns "
                      "FROM step_overlap WHERE run_id = 'r0'")
    # compute 100 + 150; communication [80,200) + [290,320) = 150; overlap 20 + 50 + 10
    assert rows == [{"step": 0, "step_ns": 400, "compute_ns": 250, "comm_ns": 150,
                     "overlap_ns": 80, "exposed_comm_ns": 70}]


def test_clock_alignment_and_instances(store: Store) -> None:
    al = store.rows("SELECT rank, offset_ns, error_ns, n_matched FROM clock_alignment "
                    "ORDER BY rank")
    # rank 1 end differences: 200 - 1210 = -1010, 320 - 1350 = -1030: median -1020, MAD 10
    assert al == [{"rank": 0, "offset_ns": 0, "error_ns": 0, "n_matched": 2},
                  {"rank": 1, "offset_ns": -1020, "error_ns": 10, "n_matched": 2}]
    inst = store.rows("SELECT rank, seq, aligned_start_ns, wait_ns, last_to_arrive, "
                      "algbw_gbps, busbw_gbps FROM collective_instance ORDER BY seq, rank")
    assert inst[0] == {"rank": 0, "seq": 0, "aligned_start_ns": 80, "wait_ns": 0,
                       "last_to_arrive": True, "algbw_gbps": 1000 / 120,
                       "busbw_gbps": 1000 / 120 * 1.0}
    assert inst[1]["aligned_start_ns"] == 30 and inst[1]["wait_ns"] == 50
    crit = store.rows("SELECT rank, n_last_to_arrive, is_critical FROM critical_rank "
                      "ORDER BY rank")
    assert crit == [{"rank": 0, "n_last_to_arrive": 2, "is_critical": True},
                    {"rank": 1, "n_last_to_arrive": 0, "is_critical": False}]


def test_constructs_declare_the_macros_columns(store: Store) -> None:
    from argusdb.checker.constructs import CONSTRUCTS
    macros = {n: c for n, c in CONSTRUCTS.items() if c.base == "interval_event"}
    assert set(macros) == {"interval_union", "interval_merge", "interval_intersect",
                           "interval_span_join", "interval_exposed", "interval_span_join_ranks"}
    for name, c in macros.items():
        args = ", ".join("'compute'" for _ in c.params)
        cur = store.sql(f"SELECT * FROM {name}({args}) LIMIT 0")
        assert tuple(d[0] for d in cur.description) == c.columns, name
        # every pass-through column is a column of the input and of the output
        assert set(c.passthrough) <= set(c.columns), name
        assert set(c.passthrough) <= {d[0] for d in store.sql(
            "SELECT * FROM interval_event LIMIT 0").description}, name


def test_span_join_across_ranks_on_the_aligned_clock(store: Store) -> None:
    # rank 1's collectives on the reference clock (offset -1020): [30, 190) and [275, 330);
    # rank 0's compute [0, 100) and [150, 300)
    rows = store.rows("SELECT a_rank, b_rank, a_ordinal, b_ordinal, start_ns, end_ns, dur_ns "
                      "FROM interval_span_join_ranks('collective', 'compute') "
                      "ORDER BY start_ns")
    assert rows == [
        {"a_rank": 1, "b_rank": 0, "a_ordinal": 0, "b_ordinal": 0, "start_ns": 30,
         "end_ns": 100, "dur_ns": 70},
        {"a_rank": 1, "b_rank": 0, "a_ordinal": 0, "b_ordinal": 1, "start_ns": 150,
         "end_ns": 190, "dur_ns": 40},
        {"a_rank": 1, "b_rank": 0, "a_ordinal": 1, "b_ordinal": 1, "start_ns": 275,
         "end_ns": 300, "dur_ns": 25}]
    # a rank is never paired with itself (interval_span_join does that)
    assert store.rows("SELECT count(*) AS n FROM interval_span_join_ranks('collective', "
                      "'collective') WHERE a_rank = b_rank") == [{"n": 0}]


def test_the_identity_of_each_run_passes_through(store: Store) -> None:
    rows = store.rows("SELECT DISTINCT run_id, program_version, launch_group, rank, signature, "
                      "timing_clean FROM interval_exposed('collective', 'compute') "
                      "ORDER BY run_id")
    assert rows == [{"run_id": r, "program_version": "v1", "launch_group": "lg", "rank": k,
                     "signature": "none", "timing_clean": True}
                    for k, r in enumerate(("r0", "r1"))]


def test_checked_queries_over_the_macros(store: Store) -> None:
    """A checked span join over the runs of one version with one standing is answered; one
    more version, or a profiled run beside the clean ones, is refused with its rule."""
    from argusdb.api import checked
    from argusdb.errors import QueryRefused

    q = ("SELECT a_name, b_name, sum(dur_ns) AS ns FROM interval_span_join('collective', "
         "'span') GROUP BY ALL")
    assert checked.execute(q, store).to_pylist() == [
        {"a_name": "allreduce", "b_name": "mlp", "ns": 80}]
    store.insert_row("program_version", {"program_version": "v2", "program": "p"})
    seed.run(store, "r2", "v2", collector="torchdist", timing_clean=True, signature="none")
    _span(store, "r2", "span", "compute", "mlp", 0, 100, 0, 0)
    _coll(store, "r2", 0, 0, 50, 150, step=0)
    with pytest.raises(QueryRefused) as refused:
        checked.execute(q, store)
    f = refused.value.findings[0]
    assert f.code == "AR01" and "interval_span_join" in f.message and "argus diff" in f.remedy
    assert checked.execute(q.replace("GROUP BY ALL", "WHERE program_version = 'v1' GROUP BY "
                                     "ALL"), store).num_rows == 1
    seed.run(store, "r3", "v1", collector="kineto", timing_clean=False,
             signature="torch_profiler+activity_tracing")
    _span(store, "r3", "span", "compute", "mlp", 0, 100, 0, 0)
    _coll(store, "r3", 0, 0, 50, 150, step=0)
    with pytest.raises(QueryRefused) as refused:
        checked.execute(q.replace("GROUP BY ALL", "WHERE program_version = 'v1' GROUP BY "
                                  "ALL"), store)
    f = refused.value.findings[0]
    assert f.code == "AR02" and "torch_profiler" in f.message and "timing_clean" in f.remedy
    ok = q.replace("GROUP BY ALL", "WHERE program_version = 'v1' AND timing_clean GROUP BY ALL")
    assert checked.execute(ok, store).to_pylist()[0]["ns"] == 80


def test_clock_offset_is_derived_evidence_with_its_error(store: Store) -> None:
    from argusdb.store import materialize
    with store.transaction():
        materialize.refresh(store)
    rows = store.rows("SELECT rank, value, lineage->>'$.conditions' AS c FROM evidence "
                      "WHERE signal = 'clock_offset' ORDER BY rank")
    assert [(r["rank"], r["value"]) for r in rows] == [("0", 0.0), ("1", -1020.0)]
    assert '"error_ns":10' in rows[1]["c"] and '"n_matched":2' in rows[1]["c"]
