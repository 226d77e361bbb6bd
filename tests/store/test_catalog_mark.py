"""A store records which release wrote its views and macros (the end of ``store_meta``'s
comment), so opening it re-creates them only when they are not this release's.

Before: every read-write open re-created every view, macro and comment (~0.4 s CPU per
command), and a read-only open never did, so a store last opened by a release without a view
this one reads (``derivation_input_state``) failed every question with a DuckDB catalog error.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from argusdb.api import connect
from argusdb.api.metadata import _fingerprint, _stamp
from argusdb.schema import catalog
from argusdb.store import open_store
from tests.conftest import DEMO


def _as_another_release_left_it(path: Path) -> None:
    """What a release with another catalog leaves: its own views (one of ours missing) and
    its docs copied in, store_meta's without our mark."""
    con = duckdb.connect(str(path))
    con.execute("DROP VIEW IF EXISTS derivation_input_state")
    doc = catalog.all_objects()["store_meta"].description.replace("'", "''")
    con.execute(f"COMMENT ON TABLE store_meta IS '{doc}'")
    # the checker's summaries stamped with that release's modules
    if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = "
                   "'_argus_meta_stamp'").fetchone() == (1,):
        con.execute("UPDATE _argus_meta_stamp SET fingerprint = 'another release'")
    con.close()


def _has_view(path: Path, name: str) -> bool:
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = ?",
                          [name]).fetchone()
        return bool(row and row[0])
    finally:
        con.close()


def test_a_store_another_release_wrote_is_brought_up_to_date_by_a_read_only_open(
        tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with connect(str(path), create=True) as db:
        db.ingest(DEMO / "softmax" / "softmax.cupti.jsonl")
    _as_another_release_left_it(path)
    with open_store(path, read_only=True) as st:
        assert st.catalog_current()  # re-created through a short read-write opening
        assert st.rows("SELECT count(*) AS n FROM derivation_input_state") == [{"n": 0}]
        # the store layer knows nothing of the checker: its summaries are still the old ones
        assert _stamp(st.con, st, "evidence") != _fingerprint(st.con)
    _as_another_release_left_it(path)
    with connect(str(path), read_only=True) as db:
        st = db.store
        assert st.catalog_current()
        # argusdb.connect's upgrade also stamped the checker's summaries: questions read them
        assert _stamp(st.con, st, "evidence") == _fingerprint(st.con)
        assert db.query("SELECT count(*) AS n FROM run").column("n").to_pylist() == [1]


def test_a_current_catalog_is_not_re_created(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    open_store(path, create=True).close()
    con = duckdb.connect(str(path))
    con.execute("COMMENT ON VIEW derivation_input_state IS 'by hand'")  # the mark left in place
    con.close()
    open_store(path).close()
    con = duckdb.connect(str(path), read_only=True)
    # the mark said current and nothing is missing: the catalog was not written again
    assert con.execute("SELECT comment FROM duckdb_views() WHERE view_name = "
                       "'derivation_input_state'").fetchone() == ("by hand",)
    con.close()
    con = duckdb.connect(str(path))
    con.execute("DROP VIEW derivation_input_state")  # a missing view is re-created all the same
    con.close()
    open_store(path).close()
    assert _has_view(path, "derivation_input_state")
    _as_another_release_left_it(path)
    open_store(path).close()
    assert _has_view(path, "derivation_input_state")
    with open_store(path, read_only=True) as st:
        assert st.catalog_current()
