"""What several micro-benchmarks share: the softmax source page as many distinct inputs, a
raw Arrow append into a store (the floor an ingest is measured against), and a recorded run
copied into many runs of its own.

Example:
    >>> SOURCE.name
    'softmax.source.csv'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from argusdb.store.embedded import Store

ROOT = Path(__file__).resolve().parent.parent
#: A real Nsight Compute source page of the demo's softmax kernel.
SOURCE = ROOT / "argusdb" / "demo" / "h200" / "softmax" / "softmax.source.csv"


def source_pages(n: int, out: Path) -> list[Path]:
    """``n`` distinct small artefacts in ``out``: the softmax source page, its kernel renamed."""
    lines = SOURCE.read_text().splitlines(keepends=True)
    files = []
    for i in range(n):
        p = out / f"page{i:04d}.source.csv"
        p.write_text("".join(f'"Function Name","softmax_fwd_{i}"\n'
                             if ln.startswith('"Function Name"') else ln for ln in lines))
        files.append(p)
    return files


def append_rows(store: Store, table: pa.Table) -> int:
    """Insert ``table`` (evidence rows, every column filled in) into the store as it is."""
    cols = ", ".join(table.schema.names)
    with store.transaction() as con:
        con.register("_rows", table)
        con.execute(f"INSERT INTO observed_evidence ({cols}) SELECT {cols} FROM _rows")
    return table.num_rows


def replicate_run(store: Store, run_id: str, lo: int, hi: int, name: str,
                  tables: tuple[str, ...] = ("instruction",)) -> None:
    """Copy the run ``run_id`` once for each ``i`` in ``range(lo, hi)``, in order, as the run
    ``printf(name, i)`` (its run row, observed evidence and the rows of ``tables``): each copy
    is a run of its own, with its own run_seq and evidence ids."""
    store.sql("CREATE OR REPLACE TEMP TABLE _replica AS SELECT i, printf(?, i) AS run_id, "
              "nextval('run_seq_gen') AS run_seq FROM range(?, ?) t(i) ORDER BY i",
              [name, lo, hi])
    store.sql("INSERT INTO run SELECT r.* REPLACE (x.run_id AS run_id, x.run_seq AS run_seq, "
              "x.run_id AS artefact_sha256) FROM run r, _replica x WHERE r.run_id = ? "
              "ORDER BY x.i", [run_id])
    store.sql("INSERT INTO observed_evidence SELECT e.* REPLACE (x.run_seq * 4294967296 "
              "+ e.src_row AS evidence_id, x.run_id AS run_id) FROM observed_evidence e, "
              "_replica x WHERE e.run_id = ? ORDER BY x.i, e.src_row", [run_id])
    for table in tables:
        store.sql(f"INSERT INTO {table} SELECT t.* REPLACE (x.run_id AS run_id) "
                  f"FROM {table} t, _replica x WHERE t.run_id = ? ORDER BY x.i", [run_id])
