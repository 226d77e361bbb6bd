"""What several micro-benchmarks share: the softmax source page as many distinct inputs, and a
raw Arrow append into a store (the floor an ingest is measured against).

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
