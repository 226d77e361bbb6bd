"""Filling a store run by run: attribution works on the new run only and matches a full build.

The layer norm of tests/data/attribution shares `tl.sum` lines between two regions; each copy of
its source page counts instructions, so each new run is a mapping-run candidate for the others.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store import materialize
from argusdb.store.embedded import Store
from tests.conftest import DATA

LN = DATA / "attribution"
PROG = ProgramSource.from_path(LN / "kernels" / "layernorm.py")
OPTS = {"target": "sm_90"}


def page_copy(tmp: Path, i: int) -> Path:
    """A distinct artefact (hence a new run) with the source page's rows."""
    p = tmp / f"copy{i}.source.csv"
    p.write_text((LN / "layernorm.source.csv").read_text() + "\n" * (i + 1))
    return p


def snapshot(store: Store) -> list[list[dict[str, object]]]:
    """Both tables, sums rounded: parallel float sums differ in the last bits between builds."""
    q = ("SELECT * REPLACE (round(share, 9) AS share, round(association_entropy, 9) AS "
         "association_entropy) FROM attribution_split ORDER BY ALL",
         "SELECT * REPLACE (round(value, 6) AS value, round(association_entropy, 9) AS "
         "association_entropy) FROM region_attribution ORDER BY ALL")
    return [store.rows(x) for x in q]


def test_filling_run_by_run_matches_a_full_build(store: Store, tmp_path: Path) -> None:
    for p in (LN / "layernorm.ttgir", LN / "layernorm.sass", LN / "layernorm.source.csv",
              LN / "layernorm.counts.source.csv"):
        ingest_path(store, p, PROG, OPTS)
    old = snapshot(store)
    for i in range(3):
        version = ingest_path(store, page_copy(tmp_path, i), PROG, OPTS).program_version
    # The older runs had two counted runs already: the new ones leave their rows as they were.
    new = snapshot(store)
    assert all(r in new[k] for k in range(2) for r in old[k])
    seq = store.sql("SELECT max(run_seq) FROM run").fetchone()
    assert seq is not None and not materialize._resplits_older(store, version, seq[0])
    store.sql("DELETE FROM materialization")
    assert materialize.ensure_fresh(store).rebuilt_versions == [version]
    assert snapshot(store) == new


def test_mapping_run_is_the_newest_counted_run_before_else_the_first_after(
        store: Store, tmp_path: Path) -> None:
    for p in (LN / "layernorm.ttgir", LN / "layernorm.sass", LN / "layernorm.source.csv"):
        ingest_path(store, p, PROG, OPTS)
    first = store.sql("SELECT max(run_seq) FROM run").fetchone()
    assert first is not None
    # The second counted run re-splits the first (it had none): a whole rebuild, once.
    ingest_path(store, page_copy(tmp_path, 0), PROG, OPTS)
    version = store.sql("SELECT program_version FROM run WHERE run_seq = ?", first).fetchone()
    assert version is not None
    assert materialize._resplits_older(store, version[0], first[0] + 1)
    for i in range(1, 3):
        ingest_path(store, page_copy(tmp_path, i), PROG, OPTS)
    got = store.rows("SELECT r.run_seq, m.run_seq AS mapping_seq FROM run AS r "
                     "JOIN (SELECT DISTINCT run_id, mapping_run_id FROM attribution_split "
                     "WHERE basis = 'mapping_run') AS s USING (run_id) "
                     "JOIN run AS m ON m.run_id = s.mapping_run_id ORDER BY 1")
    seqs = [r["run_seq"] for r in got]
    assert len(seqs) == 4
    assert got == [{"run_seq": seqs[0], "mapping_seq": seqs[1]},
                   *({"run_seq": s, "mapping_seq": p} for p, s in itertools.pairwise(seqs))]

