"""The evidence shape has one home: the annotations of schema/ and the macros of
queries/shape.sql. Routing, keys, scope and batch schemas are read from them; ingest fills the
keys with the macros; the store only appends."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path, read_artefact
from argusdb.schema import catalog, shape
from argusdb.store.embedded import Store
from tests.conftest import DATA, DEMO, KERNELS


def keyed_rows(store: Store, name: str, batch: pa.RecordBatch, run: dict[str, Any],
          kernels: Sequence[str] = (), program: str | None = None) -> pa.RecordBatch:
    """The rows of collector batch ``name`` as its table stores them, evaluated into Arrow:
    the :func:`argusdb.schema.shape.marked` rows with the :func:`argusdb.schema.shape.key_select`
    formulas
    ingest puts in its append (pins the formulas)."""
    rows = shape.marked(name, batch, run, kernels, program)
    select = ", ".join(f'{sql} AS "{col}"' for col, sql in
                       shape.key_select(shape.routes()[name], rows.schema.names).items())
    got = store.con.from_arrow(rows).project(select).to_arrow_table()
    return pa.RecordBatch.from_arrays([c.combine_chunks() for c in got.columns],
                                      schema=got.schema)

GPU = DATA / "gpu"


def test_every_batch_a_reader_yields_is_routed_and_conforms() -> None:
    """Every shipped artefact kind's batches have a table, and their columns are that table's
    non-key columns with the DDL's types (the store's own column types, below)."""
    seen: set[str] = set()
    for path in [GPU / "softmax.default.instr.chrome_trace.gz", GPU / "softmax.default.sass",
                 GPU / "softmax.default.source.csv", GPU / "softmax.default.run1.cupti.jsonl",
                 DEMO / "softmax" / "softmax.ttgir", DATA / "proton" / "tree.hatchet"]:
        for name, batch in read_artefact(path).batches():
            seen.add(name)
            assert name in shape.routes(), name
            conformed = shape.conform(name, batch)
            assert conformed.schema == shape.batch_schema(name)
    assert {"evidence", "instruction", "inline_site", "kernel_launch", "scope_event"} <= seen


def test_batch_schemas_and_keys_are_the_store_columns(store: Store) -> None:
    arrow = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(),
             "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}
    for name, table in shape.routes().items():
        cols = store.rows("SELECT column_name, data_type FROM duckdb_columns() WHERE "
                          "table_name = ? ORDER BY column_index", [table])
        keys = shape.key_columns(table)
        assert set(keys) <= {c["column_name"] for c in cols}
        assert [(f.name, f.type) for f in shape.batch_schema(name)] == [
            (c["column_name"], arrow[c["data_type"]]) for c in cols
            if c["column_name"] not in keys]
    assert shape.key_columns("observed_evidence") == {
        "evidence_id": "evidence_id", "program_version": "run", "task_id": "run",
        "run_id": "run", "region_id": "region"}
    assert shape.stays_with_program_run("collective")
    assert not shape.stays_with_program_run("evidence")


def test_annotations_are_not_documentation() -> None:
    ev = catalog.all_objects()["observed_evidence"]
    assert ev.annotations == {"batch": "evidence"}
    assert ev.column_annotations["rank"] == {"scope": "launches", "fill": "run"}
    assert not any("@" in s.split(" IS ", 1)[1].replace("@triton", "")
                   for s in catalog.comment_statements())
    assert shape.SCOPE == ("rank", "launch", "cta", "sm", "warp", "warp_role", "loop_iter")
    assert shape.INTRA_KERNEL_SCOPE == shape.SCOPE[2:]


@pytest.mark.parametrize(("pc", "line", "path", "kernel", "wide"), [
    (None, None, None, "k", True),
    (None, None, "k", "k", True),
    (None, None, "it0/k", "k", True),          # a Proton frame above the kernel
    (None, None, "k/load", "k", False),        # a scope inside the kernel
    (None, None, "k2/load", "k", False),
    (None, None, "xk", "k", False),            # a suffix that is not a whole frame
    (16, None, None, "k", False),              # one instruction
    (None, 7, None, "k", False),               # one source line
])
def test_kernel_wide_macro(store: Store, pc: int | None, line: int | None, path: str | None,
                           kernel: str, wide: bool) -> None:
    got = store.sql("SELECT kernel_wide(?::BIGINT, ?::INTEGER, ?::VARCHAR, ?::VARCHAR)",
                    [pc, line, path, kernel]).fetchone()
    assert got == (wide,)


def test_ingest_binds_exactly_the_kernel_wide_rows(store: Store) -> None:
    """Proton scopes (in-kernel), ncu per-instruction rows and CUPTI launches of one program:
    region_id is set on the kernel-wide rows of the program's kernels, and only there; the
    evidence ids are the macro's run_seq * 2^32 + src_row."""
    src = ProgramSource.from_path(KERNELS / "softmax.py")
    ingest_path(store, DEMO / "softmax" / "softmax.source.csv", src, {"target": "sm_90"})
    ingest_path(store, GPU / "softmax.default.run1.cupti.jsonl", src, {"target": "sm_90"})
    bad = store.rows(
        "SELECT e.kernel, e.pc, e.source_line, e.scope_path, e.region_id FROM "
        "observed_evidence e JOIN program_version v USING (program_version) WHERE "
        "(e.region_id IS NOT NULL) <> coalesce(kernel_wide(e.pc, e.source_line, "
        "e.scope_path, e.kernel) AND e.kernel = 'softmax_fwd', false) LIMIT 5")
    assert bad == []
    n_wide, n_rows = store.sql("SELECT count(region_id), count(*) FROM observed_evidence"
                               ).fetchone() or (0, 0)
    assert 0 < n_wide < n_rows
    assert store.sql("SELECT count(*) FROM observed_evidence e JOIN run r USING (run_id) "
                     "WHERE e.evidence_id <> r.run_seq * 4294967296 + e.src_row"
                     ).fetchone() == (0,)
    assert store.sql("SELECT count(*) FROM kernel_launch WHERE region_id IS NULL "
                     "AND kernel = 'softmax_fwd'").fetchone() == (0,)


def test_run_rank_fills_the_rank_scope(store: Store) -> None:
    """``@fill: run``: a run's rank is the rank scope of its rows unless the row names one."""
    batch = pa.RecordBatch.from_pydict({"kernel": ["k", "k"], "rank": ["all", "3"],
                                        "signal": ["duration"] * 2, "value": [1.0, 2.0],
                                        "src_row": [0, 1]})
    run = {"run_seq": 7, "program_version": "v", "task_id": "t", "run_id": "r", "rank": "1"}
    keyed = keyed_rows(store, "evidence", batch, run)
    assert keyed.column("rank").to_pylist() == ["1", "3"]
    assert keyed.column("evidence_id").to_pylist() == [7 << 32, (7 << 32) + 1]
    assert keyed.column("region_id").null_count == 2
    empty = keyed_rows(store, "evidence", batch.slice(0, 0), run)
    assert empty.num_rows == 0 and "evidence_id" in empty.schema.names


def test_append_batch_only_appends(store: Store, tmp_path: Path) -> None:
    """The store computes nothing: a batch without its keys is refused by the table's
    constraints, a keyed one lands as given."""
    import duckdb

    batch = pa.RecordBatch.from_pydict({"kernel": ["k"], "pc": [16]})
    with pytest.raises(duckdb.ConstraintException):
        store.append_batch("instruction", batch)
    run = {"run_seq": 1, "program_version": "v", "task_id": "t", "run_id": "r"}
    assert store.append_batch("instruction", keyed_rows(store, "instruction", batch, run)) == 1
    assert store.rows("SELECT run_id, kernel, pc FROM instruction") == [
        {"run_id": "r", "kernel": "k", "pc": 16}]


def test_region_of_a_kernel_whose_name_quotes(store: Store) -> None:
    """The run's values enter the key expressions as Arrow columns: a quote in a kernel or
    program name stays text."""
    batch = pa.RecordBatch.from_pydict({"kernel": ["k'1", "other"], "signal": ["duration"] * 2,
                                        "value": [1.0, 2.0], "src_row": [0, 1]})
    run = {"run_seq": 2, "program_version": "v", "task_id": "t", "run_id": "r", "rank": None}
    keyed = keyed_rows(store, "evidence", batch, run, kernels=["k'1"], program="p'q")
    assert keyed.column("region_id").to_pylist() == ["p'q/k'1", None]
    assert keyed.column("rank").to_pylist() == ["all", "all"]


def test_appended_batches_are_let_go_before_commit(store: Store) -> None:
    """A locked-down store (every CLI connection) has no replacement scans; a registered
    batch would stay in memory until COMMIT, so a run's whole file would. Appended batches are
    freed as they are appended: Arrow's allocations come back to where they were."""
    store.lock_down()
    run = {"run_seq": 3, "program_version": "v", "task_id": "t", "run_id": "r"}
    n = 20_000
    with store.transaction():
        before = pa.total_allocated_bytes()
        for i in range(20):
            batch = pa.RecordBatch.from_pydict({
                "kernel": [f"kernel_{i}_{j % 7}" for j in range(n)],
                "pc": list(range(i * n, (i + 1) * n)), "sass": ["FFMA R1, R2, R3, R4"] * n})
            one = batch.nbytes
            # as ingest appends: run marks in Arrow, the key formulas in the append
            rows = shape.marked("instruction", batch, run)
            store.append_batch("instruction", rows,
                               shape.key_select("instruction", rows.schema.names))
            del batch, rows
        held = pa.total_allocated_bytes() - before
    assert held < one, (held, one)
    assert store.rows("SELECT count(*) AS n, max(pc) AS top FROM instruction") == [
        {"n": 20 * n, "top": 20 * n - 1}]
