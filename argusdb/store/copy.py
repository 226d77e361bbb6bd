"""``argus copy SRC DST``: move a store between kinds (embedded file ↔ shared DuckLake), whole.

Every table of ``argusdb/schema/`` is copied row for row (attribution and derivation included, so
the copy answers without rebuilding); the destination must hold no runs. The copy is one
transaction on the destination: a killed copy leaves it empty. A shared store's DuckLake
snapshot history stays behind (the copy is its newest snapshot); an embedded destination gets
one snapshot per run when the source had none of its own (as a migration from schema 1 does).

Example:
    >>> copy_store("argus.duckdb", "copy.duckdb")["run"]
    14
"""

from __future__ import annotations

from argusdb.errors import StoreError
from argusdb.store import open_store
from argusdb.store.versions import schema_tables


def copy_store(src: str, dst: str) -> dict[str, int]:
    """Copy store ``src`` into ``dst`` (created when missing); rows copied per table.

    Raises:
        StoreError: ``dst`` already holds runs, or either store cannot be opened.
    """
    if src == dst:
        raise StoreError(f"{src}: source and destination are the same store")
    counts: dict[str, int] = {}
    with open_store(src, read_only=True) as s, open_store(dst, create=True) as d:
        row = d.sql("SELECT count(*) FROM run").fetchone()
        if row and row[0]:
            raise StoreError(f"{dst}: already holds {row[0]} runs; copy into a new store "
                             "(a new file, or a new metadata_schema= / database)")

        def attempt() -> None:
            with d.transaction():
                for t in schema_tables():
                    if t == "store_meta":
                        continue
                    data = s.arrow(f"SELECT * FROM {t}")
                    d.sql(f"DELETE FROM {t}")
                    d.load_arrow(t, data)
                    counts[t] = data.num_rows
                if counts.get("store_snapshot", 0) == 0 and not d.path.startswith("ducklake:"):
                    d.sql("INSERT INTO store_snapshot SELECT row_number() OVER (ORDER BY "
                          "run_seq), ingested_at, run_seq, 'copied', [run_id] FROM run")
            d.reset_run_seq()

        d.retrying(attempt)
    return counts
