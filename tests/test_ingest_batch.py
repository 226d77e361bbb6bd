"""Many artefacts in one command: folders, one transaction and one refresh, all-or-nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.ingest import expand_paths, ingest_path, ingest_paths
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.conftest import DEMO, KERNELS

SOFTMAX = DEMO / "softmax"


def test_a_directory_ingests_every_recognized_artefact(tmp_path: Path) -> None:
    d = tmp_path / "art"
    shutil.copytree(SOFTMAX, d)
    (d / "notes.txt").write_text("not an artefact\n")
    (d / ".hidden.sass").write_text((SOFTMAX / "softmax.sass").read_text())
    files = expand_paths([d])
    assert [f.name for f in files] == sorted(p.name for p in SOFTMAX.iterdir())
    store = str(tmp_path / "s.duckdb")
    r = CliRunner().invoke(main, ["ingest", store, str(d), "--program",
                                  str(KERNELS / "softmax.py"), "--option", "target=sm_90",
                                  "--json"])
    assert r.exit_code == 0, r.output
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == len(files) and not any(x["already_ingested"] for x in runs)
    with open_store(store) as st:
        # (a trace's kernels that are not the program's become a timeline run of their own)
        n = st.sql("SELECT count(DISTINCT artefact_name) FROM run").fetchone()
        bad = st.sql("SELECT count(*) FILTER (WHERE NOT ok) FROM attribution_conservation"
                     ).fetchone()
    assert n == (len(files),) and bad == (0,)


def test_a_batch_matches_one_ingest_per_file(store: Store, tmp_path: Path) -> None:
    program = ProgramSource.from_path(KERNELS / "softmax.py")
    files = expand_paths([SOFTMAX])
    ingest_paths(store, files, program, {"target": "sm_90"})
    q = ("SELECT region_id, signal, sum(value) AS v FROM evidence WHERE evidence_class = "
         "'attributed' GROUP BY ALL ORDER BY ALL")
    batched = store.rows(q)
    other = open_store(tmp_path / "one.duckdb", create=True)
    try:
        for f in files:
            ingest_path(other, f, program, {"target": "sm_90"})
        assert other.rows(q) == batched and batched
    finally:
        other.close()


def test_an_error_writes_nothing_of_the_command(store: Store, tmp_path: Path) -> None:
    bad = tmp_path / "broken.source.csv"
    bad.write_text("\n")
    with pytest.raises(InputError, match=r"broken\.source\.csv"):
        ingest_paths(store, [SOFTMAX / "softmax.sass", bad])
    assert store.sql("SELECT count(*) FROM run").fetchone() == (0,)
    again = ingest_paths(store, [SOFTMAX / "softmax.sass"])
    assert [r.already for r in again] == [False]


def test_ingest_works_without_replacement_scans(store: Store) -> None:
    """Batches reach DuckDB through a replacement scan; where those are off, through register."""
    store.con.execute("SET python_enable_replacements = false")
    r = ingest_path(store, SOFTMAX / "softmax.sass")
    n = store.sql("SELECT count(*) FROM instruction").fetchone()
    assert n is not None and n[0] == r.rows["instruction"] > 0


@pytest.mark.parametrize("order", ["within a batch", "across batches, out of order"])
def test_a_repeated_row_number_is_refused(store: Store, order: str) -> None:
    """observed_evidence has no key index: ingest itself refuses a run whose reader numbers two
    rows alike (they would share an evidence id), and writes nothing of the command."""
    import pyarrow as pa

    from argusdb.ingest import read_artefact

    art = read_artefact(DEMO / "softmax" / "softmax.source.csv")
    parts = [(t, b) for t, b in art.batches()]
    ev = pa.Table.from_batches([b for t, b in parts if t == "evidence"]).combine_chunks()
    rows = ev.column("src_row").to_pylist()
    if order == "within a batch":
        rows[5] = rows[3]
        bad = [("evidence", pa.RecordBatch.from_arrays(
            [pa.array(rows, pa.int64()) if n == "src_row" else ev.column(n).chunk(0)
             for n in ev.schema.names], names=ev.schema.names))]
    else:   # the second half first, then the first half with one number of the second
        half = ev.num_rows // 2
        first = ev.slice(0, half).to_batches()[0]
        second = ev.slice(half).to_batches()[0]
        rows = first.column("src_row").to_pylist()
        rows[0] = second.column("src_row")[0].as_py()
        first = pa.RecordBatch.from_arrays(
            [pa.array(rows, pa.int64()) if n == "src_row" else first.column(n)
             for n in first.schema.names], names=first.schema.names)
        bad = [("evidence", second), ("evidence", first)]
    art.batches = lambda: iter(bad)
    with pytest.raises(InputError, match="row number"):
        ingest_paths(store, [art.path], artefacts=[art])
    assert store.sql("SELECT count(*) FROM observed_evidence").fetchone() == (0,)
    assert store.sql("SELECT count(*) FROM run").fetchone() == (0,)
