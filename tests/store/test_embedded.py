"""The embedded store: waiting for locks, the WAL, schema versions and migration."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from argusdb import demo
from argusdb.api import connect
from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import StoreError
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from argusdb.store.embedded import SCHEMA_VERSION, Store
from tests.conftest import DEMO, KERNELS, ROOT

V1 = ROOT / "tests" / "data" / "store" / "v1-softmax.duckdb.gz"
CUPTI = DEMO / "softmax" / "softmax.cupti.jsonl"
SOFTMAX = KERNELS / "softmax.py"


def _hold(db: Path, seconds: float) -> subprocess.Popen[str]:
    """A process that holds the store's write lock for ``seconds``."""
    code = (f"import duckdb, time\nc = duckdb.connect({str(db)!r})\nprint('held', flush=True)\n"
            f"time.sleep({seconds})\nc.close()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_writer_waits_for_the_lock_then_lands(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    open_store(db, create=True).close()
    proc = _hold(db, 1.5)
    t0 = time.monotonic()
    res = CliRunner().invoke(main, ["ingest", str(db), str(CUPTI), "--program", str(SOFTMAX)])
    waited = time.monotonic() - t0
    proc.wait()
    assert res.exit_code == 0, res.output
    assert "locked by" in res.output and "waiting up to" in res.output
    assert waited >= 0.5
    with open_store(db, read_only=True) as st:   # the program's run + the timeline run of
        assert st.sql("SELECT count(*) FROM run").fetchone() == (2,)  # torch's own kernels


def test_writer_gives_up_after_the_timeout_with_a_message(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    open_store(db, create=True).close()
    proc = _hold(db, 3)
    try:
        res = CliRunner().invoke(main, ["ingest", str(db), str(CUPTI), "--lock-timeout", "0.3"])
        assert res.exit_code == 2
        assert "still locked by another process after 0.3 s" in res.output
        assert "ARGUS_LOCK_TIMEOUT" in res.output
        assert "Traceback" not in res.output
    finally:
        proc.kill()
        proc.wait()


def test_reader_waits_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "r.duckdb"
    with open_store(db, create=True) as st:
        ingest_path(st, CUPTI, ProgramSource.from_path(SOFTMAX))
    proc = _hold(db, 1.0)
    monkeypatch.setenv("ARGUS_LOCK_TIMEOUT", "30")
    res = CliRunner().invoke(main, ["runs", str(db), "--json"])
    proc.wait()
    assert res.exit_code == 0, res.output
    assert '"run_id"' in res.output


def _committed_in_wal(db: Path) -> list[str]:
    """Ingest in a process that dies after COMMIT and before the checkpoint: the runs (the
    program's, and the timeline run of torch's kernels) are only in the WAL, and the pending
    marker names them."""
    open_store(db, create=True).close()
    code = (
        "import os\nfrom argusdb.store import open_store\n"
        "from argusdb.store.embedded import Store\n"
        "from argusdb.ingest import ingest_path\n"
        "from argusdb.collectors.regions import ProgramSource\n"
        "def dying(self):\n"
        "    print(' '.join(self._new_runs), flush=True); os._exit(0)\n"
        "Store._after_commit = dying\n"
        f"st = open_store({str(db)!r})\n"
        "st.con.execute(\"SET checkpoint_threshold = '10GB'\")\n"
        f"ingest_path(st, {str(CUPTI)!r}, ProgramSource.from_path({str(SOFTMAX)!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert (db.parent / (db.name + ".wal")).stat().st_size > 0
    return out.stdout.split()


@pytest.mark.parametrize("damage", ["truncated", "removed", "emptied"])
def test_a_wal_that_loses_a_committed_run_is_refused(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "d.duckdb"
    run = _committed_in_wal(db)[0]
    wal = db.parent / (db.name + ".wal")
    if damage == "truncated":
        os.truncate(wal, wal.stat().st_size // 2)
    elif damage == "removed":
        wal.unlink()
    else:
        os.truncate(wal, 0)
    for ro in (True, False):
        with pytest.raises(StoreError, match=rf"run\(s\) .*{run}.*committed.*did not replay"):
            open_store(db, read_only=ro)
    res = CliRunner().invoke(main, ["runs", str(db)])
    assert res.exit_code == 2 and "write-ahead log" in res.output


def test_a_corrupt_wal_is_named(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    _committed_in_wal(db)
    wal = db.parent / (db.name + ".wal")
    n = wal.stat().st_size
    with open(wal, "r+b") as fh:
        fh.seek(n // 2)
        b = fh.read(1)
        fh.seek(n // 2)
        fh.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(StoreError, match=r"write-ahead log \S*c\.duckdb\.wal is damaged"):
        open_store(db)


def test_an_intact_wal_replays_and_is_checkpointed(tmp_path: Path) -> None:
    db = tmp_path / "i.duckdb"
    runs = _committed_in_wal(db)
    assert len(runs) == 2
    with open_store(db) as st:
        assert all(st.run_exists(r) for r in runs)
    assert not (db.parent / (db.name + ".argus-pending")).exists()
    with open_store(db, read_only=True) as st:
        assert sorted(st.snapshots()[-1]["run_ids"]) == sorted(runs)


def test_each_ingest_is_checkpointed(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with open_store(db, create=True) as st:
        ingest_path(st, CUPTI, ProgramSource.from_path(SOFTMAX))
        wal = db.parent / (db.name + ".wal")
        assert not wal.exists() or wal.stat().st_size == 0
        assert not (db.parent / (db.name + ".argus-pending")).exists()


def test_duckdb_draws_no_progress_bar(tmp_path: Path) -> None:
    """DuckDB draws its own bar on stdout, also into a file or a pipe, for any statement past
    2 s: a long ingest's ``--json`` answer came back with it in front."""
    with open_store(tmp_path / "p.duckdb", create=True) as st:
        assert st.sql("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    with open_store(tmp_path / "p.duckdb", read_only=True) as st:
        assert st.sql("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    assert Store.in_memory("m").sql("SELECT current_setting('enable_progress_bar')"
                                    ).fetchone() == (False,)


def test_two_readers_of_one_store_in_one_process(tmp_path: Path) -> None:
    """A second connection to the same file shares the first one's DuckDB instance, whose
    configuration the first question locked: the second still opens and answers (turning the
    progress bar off there was refused, and the open with it)."""
    db = tmp_path / "two.duckdb"
    open_store(db, create=True).close()
    with connect(db, read_only=True) as a:
        a.query("SELECT count(*) AS n FROM run")
        with connect(db, read_only=True) as b:
            assert b.query("SELECT count(*) AS n FROM run").to_pylist() == [{"n": 0}]
        assert a.query("SELECT count(*) AS n FROM run").to_pylist() == [{"n": 0}]


def test_ingest_memory_limit_spills_beside_the_store(tmp_path: Path) -> None:
    """``argus ingest``'s connection (``memory_limit``) bounds DuckDB and spills past it next
    to the store (a derivation over a large trace's spans needs more than the limit); a
    question's connection keeps 4GB and never spills."""
    from argusdb.ingest import INGEST_MEMORY_LIMIT

    db = tmp_path / "m.duckdb"
    ask = "SELECT current_setting('temp_directory'), current_setting('memory_limit')"
    with connect(db, create=True, memory_limit=INGEST_MEMORY_LIMIT) as c:
        spill, limit = c.store.sql(ask).fetchone() or ("", "")
        assert spill == f"{db}.tmp" and limit.endswith("MiB") and float(limit.split()[0]) < 512
    with connect(db) as c:
        assert c.store.sql(ask).fetchone() == ("", "3.7 GiB")


def test_not_a_store(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 10)
    with pytest.raises(StoreError, match="not a DuckDB database"):
        open_store(text, create=True)
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path, create=True)
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE sales (x INTEGER)")
    con.close()
    before = other.read_bytes()
    for kw in ({"create": True}, {"read_only": True}, {}):
        with pytest.raises(StoreError, match="not an argusdb store"):
            open_store(other, **kw)  # type: ignore[arg-type]
    assert other.read_bytes() == before
    res = CliRunner().invoke(main, ["ingest", str(text), str(CUPTI)])
    assert res.exit_code == 2 and "not a DuckDB database" in res.output


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "n.duckdb"
    open_store(db, create=True).close()
    con = duckdb.connect(str(db))
    con.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'",
                [str(SCHEMA_VERSION + 1)])
    con.close()
    for ro in (True, False):
        with pytest.raises(StoreError, match=f"newer argusdb \\(store schema "
                                             f"{SCHEMA_VERSION + 1}"):
            open_store(db, read_only=ro)


def _answers(path: str | Path) -> list[list[dict[str, object]]]:
    with connect(path, read_only=True) as db:
        return [db.query(q).to_pylist() for q in (demo.QUESTION, demo.REGION_BREAKDOWN)]


def test_v1_store_migrates_and_answers_identically(tmp_path: Path) -> None:
    """A store written by the release before schema versions (tests/data/store) opens,
    migrates in one transaction and answers the README's demo questions as a new store does."""
    old = tmp_path / "v1.duckdb"
    with gzip.open(V1) as src, open(old, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = duckdb.connect(str(old), read_only=True)
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    (n_rows,) = con.execute("SELECT count(*) FROM observed_evidence").fetchone() or (0,)
    con.close()
    assert "run" in tables and "store_meta" not in tables and n_rows
    got = _answers(old)   # a read-only opening migrates through a short writable one
    with open_store(old, read_only=True) as st:
        assert st.schema_version() == SCHEMA_VERSION
        # schema 3: observed_evidence copied into a table without the key index, every row kept
        assert st.sql("SELECT index_count FROM duckdb_tables() WHERE table_name = "
                      "'observed_evidence'").fetchone() == (0,)
        assert st.sql("SELECT count(*) FROM observed_evidence").fetchone() == (n_rows,)
        snaps = st.snapshots()
        runs = st.sql("SELECT run_id FROM run ORDER BY run_seq").fetchall()
    assert [s["run_ids"] for s in snaps] == [[r] for (r,) in runs]
    assert {s["kind"] for s in snaps} == {"migrated"}
    fresh = tmp_path / "fresh.duckdb"
    with open_store(fresh, create=True) as st:
        prog = ProgramSource.from_path(demo.KERNELS_DIR / "softmax.py")
        for p in demo.artefacts("softmax"):
            ingest_path(st, p, prog, dict(demo.OPTIONS))
    assert got == _answers(fresh)
    assert got[0] == [{"region_id": "softmax/softmax_fwd", "launches": 20, "median_us": 32.544,
                       "min_us": 32.223, "max_us": 34.848}]
    assert len(got[1]) == 4


def test_failed_migration_leaves_the_old_store(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "v1.duckdb"
    with gzip.open(V1) as src, open(old, "wb") as dst:
        shutil.copyfileobj(src, dst)
    from argusdb.store import versions as store_versions

    def broken(store: Store, version: int) -> None:
        store.con.execute("INSERT INTO store_meta VALUES ('schema_version', '2')")
        raise StoreError("migration step failed")

    monkeypatch.setattr(store_versions, "migrate", broken)
    with pytest.raises(StoreError, match="migration step failed"):
        open_store(old)
    con = duckdb.connect(str(old), read_only=True)
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'store_meta'"
                       ).fetchone() == (0,)
    con.close()


API_COLUMNS = ("api_start_ns", "api_dur_ns", "api_pid", "api_tid", "api_src_row")
#: A CUPTI recording whose runtime records launched 135 of its 163 kernels.
TIMING = ROOT / "tests" / "data" / "gpu" / "programs" / "model" / "cupti_timing.parent" / \
    "timing.638.cupti.jsonl"


def test_v2_store_gains_the_launch_call_columns(tmp_path: Path) -> None:
    """A schema-2 store (kernel_launch without the api_* columns) migrates on opening: the
    columns arrive NULL for the launches it holds, and the next ingest fills them."""
    db = tmp_path / "v2.duckdb"
    with open_store(db, create=True) as st:
        ingest_path(st, CUPTI)
    con = duckdb.connect(str(db))
    for c in API_COLUMNS:
        con.execute(f"ALTER TABLE kernel_launch DROP COLUMN {c}")
    con.execute("UPDATE store_meta SET value = '2' WHERE key = 'schema_version'")
    con.close()
    with open_store(db, read_only=True) as st:   # migrates through a short writable opening
        assert st.schema_version() == SCHEMA_VERSION >= 3
        held = st.rows("SELECT count(*) AS n, count(api_start_ns) AS api FROM kernel_launch")
        assert held[0]["n"] > 0 and held[0]["api"] == 0
    with open_store(db) as st:
        ingest_path(st, TIMING)
        got = st.rows("SELECT count(*) AS n, count(api_start_ns) AS api, count(api_tid) AS tid "
                      "FROM kernel_launch WHERE launch_api IS NOT NULL")
    # the 7 launches held before the migration keep their launch_api, their call columns NULL
    assert got == [{"n": 135 + 7, "api": 135, "tid": 135}]


def test_a_store_never_tries_fsst(tmp_path: Path) -> None:
    """Distinct long names with shared parts, where DuckDB's default picks FSST, are written
    without it by a store's connection (a second connection of the process keeps the
    setting): FSST's analysis never won on argusdb's tables and cost ingest CPU."""
    names = "SELECT 'void cutlass::Kernel<gemm_' || i || '_sm90_tensorop>(Params)' AS n " \
            "FROM range(200000) t(i)"
    plain = duckdb.connect(str(tmp_path / "plain.duckdb"))
    plain.execute(f"CREATE TABLE t AS {names}")
    plain.execute("CHECKPOINT")
    used = "SELECT DISTINCT compression FROM pragma_storage_info('t') WHERE segment_type = " \
           "'VARCHAR'"
    assert {"FSST", "DICT_FSST"} & {c for (c,) in plain.execute(used).fetchall()}
    plain.close()
    with open_store(tmp_path / "s.duckdb", create=True) as st:
        st.con.execute(f"CREATE TABLE t AS {names}")
        st.con.execute("CHECKPOINT")
        got = {c for (c,) in st.con.execute(used).fetchall()}
        assert got and not {"FSST", "DICT_FSST"} & got
        with open_store(tmp_path / "s.duckdb") as again:
            assert again.con.execute("SELECT value FROM duckdb_settings() WHERE name = "
                                     "'disabled_compression_methods'").fetchone() == \
                ("FSST,DICT_FSST",)
