"""The program's other kernels (NCCL, cuBLAS of an ingested trace) keep the program version of
the run they came from, and stores written before that migrate (schema 4).

On the recorded 2-H200 launches of ``tools/h200/xlayer/tp_block.py`` (``tests/data/gpu/xlayer``):
the serial and the overlapped program's CUPTI launches both run NCCL all-reduce kernels of one
name; their medians differ, and they must never pool into one.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from argusdb.api import checked
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest.ranks import ingest_launch
from argusdb.store import open_store
from argusdb.store.versions import SCHEMA_VERSION, other_kernels_version

XL = Path(__file__).resolve().parents[1] / "data" / "gpu" / "xlayer"
SOURCE = XL.parents[3] / "tools" / "h200" / "xlayer" / "tp_block.py"
NCCL = ("SELECT program_version, count(*) AS n, median(value) AS m FROM evidence "
        "WHERE kernel LIKE 'nccl%' AND signal = 'duration' GROUP BY ALL ORDER BY m")


def _build(db: Path) -> dict[str, str]:
    src = ProgramSource.from_path(SOURCE)
    out = {}
    with open_store(db, create=True) as st:
        for version in ("serial", "overlap"):
            launch = ingest_launch(st, XL / f"xl-{version}-cupti-1", src,
                                   {"version": version, "target": "sm_90"})
            out[version] = launch.runs[0].program_version
    return out


def _nccl(db: Path) -> list[dict[str, object]]:
    with open_store(db, read_only=True) as st:
        return st.rows(NCCL)


def test_other_kernels_of_two_programs_are_two_versions(tmp_path: Path) -> None:
    db = tmp_path / "xl.duckdb"
    versions = _build(db)
    rows = _nccl(db)
    assert len(rows) == 2 and rows[0]["m"] != rows[1]["m"]
    with open_store(db, read_only=True) as st:
        owners = st.rows("SELECT DISTINCT r.program_version AS v, "
                         "r.meta->>'$.timeline_of.program_version' AS of, p.options "
                         "FROM run r JOIN program_version p USING (program_version) "
                         "WHERE r.meta->>'$.timeline_of.run_id' IS NOT NULL")
        assert {o["of"] for o in owners} == set(versions.values())
        assert all(o["v"] not in versions.values() for o in owners)
        # a median over both programs' all-reduces is refused (two program versions) ...
        findings = checked.check("SELECT median(value) FROM evidence WHERE kernel LIKE "
                                 "'nccl%' AND signal = 'duration'", st)
        assert "AR01" in {f.code for f in findings}
        # ... and one per version is answered
        assert checked.check(NCCL, st) == []


def test_a_schema_3_store_migrates_its_shared_other_kernels(tmp_path: Path) -> None:
    """Written before schema 4: both programs' other kernels under one shared version. The
    migration gives each timeline run the version of its program's, and the medians part."""
    db = tmp_path / "v3.duckdb"
    versions = _build(db)
    pooled_rows = _nccl(db)
    con = duckdb.connect(str(db))
    timeline = con.execute("SELECT DISTINCT program_version FROM run WHERE "
                           "meta->>'$.timeline_of.run_id' IS NOT NULL").fetchall()
    shared = "0000aaaa0000bbbb"
    con.execute("INSERT INTO program_version SELECT * REPLACE (? AS program_version, "
                "'{}'::JSON AS options) FROM program_version WHERE program_version = ?",
                [shared, timeline[0][0]])
    keyed = [t for (t,) in con.execute(
        "SELECT table_name FROM duckdb_columns() WHERE column_name IN ('run_id', "
        "'program_version') AND table_name IN (SELECT table_name FROM duckdb_tables()) "
        "GROUP BY table_name HAVING count(*) = 2").fetchall()]
    for table in keyed:
        con.execute(f"UPDATE {table} SET program_version = ? WHERE program_version IN "
                    f"(SELECT unnest(?))", [shared, [t[0] for t in timeline]])
    con.execute("DELETE FROM program_version WHERE program_version IN (SELECT unnest(?))",
                [[t[0] for t in timeline]])
    con.execute("UPDATE store_meta SET value = '3' WHERE key = 'schema_version'")
    (n_pooled,) = con.execute("SELECT count(DISTINCT program_version) FROM evidence WHERE "
                              "kernel LIKE 'nccl%'").fetchone() or (0,)
    con.close()
    assert n_pooled == 1
    rows = _nccl(db)   # opening migrates
    assert [(r["n"], r["m"]) for r in rows] == [(r["n"], r["m"]) for r in pooled_rows]
    with open_store(db, read_only=True) as st:
        assert st.schema_version() == SCHEMA_VERSION >= 4
        got = {r["v"] for r in st.rows("SELECT DISTINCT program_version AS v FROM run WHERE "
                                       "meta->>'$.timeline_of.run_id' IS NOT NULL")}
        assert got == {other_kernels_version(shared, v) for v in versions.values()}
        assert st.rows("SELECT count(*) AS n FROM program_version WHERE program_version = "
                       f"'{shared}'") == [{"n": 0}]
