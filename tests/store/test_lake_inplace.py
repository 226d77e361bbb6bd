"""The shared store in place: an ingest bounded by its own size, writers queued on the lock,
PostgreSQL restarts and lost commit acknowledgements answered cleanly, upkeep commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from argusdb import demo
from argusdb.api import connect
from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import StoreError
from argusdb.ingest import ingest_path, ingest_paths
from argusdb.store import materialize, open_store
from argusdb.store.embedded import Store
from argusdb.store.shared import SharedStore
from tests.store.conftest import lake_uri
from tests.store.pgserver import Server, pg_bin
from tests.store.worker import BASE_LAUNCHES, recording

PROG = demo.KERNELS_DIR / "softmax.py"


def _opts() -> list[str]:
    return [a for k, v in demo.OPTIONS.items() for a in ("--option", f"{k}={v}")]


@pytest.mark.slow
def test_ingest_into_a_lake_larger_than_its_memory_limit(shared_uri: str) -> None:
    """4 M evidence rows in the lake, an ingest limited to 64 MB of DuckDB memory: it lands
    (a working copy of the lake would need several times the limit) and is answered."""
    with open_store(shared_uri, create=True) as st:
        ingest_path(st, recording(1, Path(shared_uri.split("data_path=")[1]).parent))
        assert isinstance(st, SharedStore)
        st.con.execute(
            "INSERT INTO lake.observed_evidence SELECT o.* REPLACE (evidence_id + (i + 1) * "
            "(1::BIGINT << 40) AS evidence_id, 'bulk-' || (i % 50) AS run_id) "
            "FROM lake.observed_evidence AS o, range(200000) AS r(i)")
        n = st.sql("SELECT count(*) FROM lake.observed_evidence").fetchone()
    assert n is not None and n[0] > 4_000_000
    no_data_path = shared_uri.split(" data_path=")[0]   # the catalog records it
    with connect(no_data_path, memory_limit="64MB") as db:
        got = db.ingest_many(list(demo.artefacts("softmax")), PROG, dict(demo.OPTIONS))
    assert got and all(not r.already for r in got)
    res = CliRunner().invoke(main, ["query", no_data_path, demo.QUESTION, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["rows"][0][:2] == ["softmax/softmax_fwd", 20]
    res = CliRunner().invoke(main, ["runs", no_data_path, "--snapshots", "--json"])
    assert res.exit_code == 0, res.output
    assert [r for r in json.loads(res.output)["rows"] if r[2] == "ingest"]


def test_writers_queue_on_the_lock(shared_uri: str, tmp_path: Path) -> None:
    """A writer holding the store's lock makes the next wait (and land after it), or, past its
    lock wait, refuse with what to do."""
    open_store(shared_uri, create=True).close()
    holder = open_store(shared_uri)
    waiter = open_store(shared_uri, lock_timeout=30)
    quick = open_store(shared_uri, lock_timeout=0.3)
    held = threading.Event()
    try:
        def hold() -> None:
            with holder.transaction():
                held.set()
                time.sleep(2.0)

        t = threading.Thread(target=hold)
        t.start()
        held.wait(10)
        with pytest.raises(StoreError, match="another writer still holds the store's lock"):
            ingest_path(quick, recording(2, tmp_path))
        t0 = time.monotonic()
        r = ingest_path(waiter, recording(3, tmp_path))
        waited = time.monotonic() - t0
        t.join()
        assert waited > 1.0 and not r.already
        assert waiter.run_exists(r.run_id) and not quick.run_exists("x")
    finally:
        for st in (holder, waiter, quick):
            st.close()


def test_lost_commit_acknowledgement_is_reported_stored(shared_uri: str, tmp_path: Path
                                                        ) -> None:
    """COMMIT went through but its answer was lost: the run is reported as stored, once; a
    connection lost before the commit is retried on a new connection and lands once."""
    with open_store(shared_uri, create=True) as opened:
        assert isinstance(opened, SharedStore)
        st = opened

        def lose_connection(ending: str) -> None:
            """The next commit ends with ``ending`` (COMMIT or ROLLBACK), then loses its
            connection; the commits after it are left alone."""

            def lost(con: duckdb.DuckDBPyConnection) -> None:
                st.commit_hook = None
                con.execute(ending)
                raise duckdb.IOException("IO Error: server closed the connection unexpectedly")

            st.commit_hook = lost

        lose_connection("COMMIT")
        r = ingest_path(st, recording(4, tmp_path))
        assert st.commit_hook is None and not r.already
        lose_connection("ROLLBACK")
        r2 = ingest_path(st, recording(5, tmp_path))
        assert not r2.already
    with open_store(shared_uri, read_only=True) as st:
        rows = st.rows("SELECT run_id, count(*) AS n FROM run GROUP BY ALL")
        launches = st.rows("SELECT run_id, count(*) AS n FROM kernel_launch GROUP BY ALL")
    assert {r["run_id"] for r in rows} == {r.run_id, r2.run_id}
    assert all(x["n"] == 1 for x in rows)
    assert {x["run_id"]: x["n"] for x in launches} == {r.run_id: BASE_LAUNCHES + 4,
                                                        r2.run_id: BASE_LAUNCHES + 5}


@pytest.fixture
def own_pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    binary = pg_bin()
    if binary is None or not (binary / "initdb").exists():
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) to start a test server")
    root = Path(f"/tmp/argus-pg-{os.getpid()}-{time.monotonic_ns()}")
    root.mkdir()
    server = Server(root, binary)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_postgres_restart_during_an_ingest(own_pg: Server, tmp_path: Path) -> None:
    """PostgreSQL restarted while an ingest writes: it is retried on a new connection and its
    runs land once; with the server down, the command says so (exit 2, the JSON envelope)."""
    uri = lake_uri(own_pg.conninfo, tmp_path)
    open_store(uri, create=True).close()
    paths: list[str | Path] = [recording(k, tmp_path) for k in range(6, 9)]
    restarted: list[float] = []

    def progress(_: object) -> None:
        if not restarted:
            restarted.append(time.monotonic())
            own_pg.restart()

    with open_store(uri) as st:
        results = ingest_paths(st, paths, ProgramSource.from_path(PROG), progress=progress)
    assert restarted and all(not r.already for r in results)
    with open_store(uri, read_only=True) as st:
        rows = st.rows("SELECT run_id FROM run")
    assert sorted(r["run_id"] for r in rows) == sorted(r.run_id for r in results)

    own_pg.ctl("stop", "-m", "fast", "-w")
    try:
        res = subprocess.run([sys.executable, "-c", "from argusdb.cli import main; main()",
                              "ingest", uri, str(recording(9, tmp_path)), "--program",
                              str(PROG), "--json"], capture_output=True, text=True,
                             timeout=120, env={**os.environ, "ARGUS_LOCK_TIMEOUT": "5"})
    finally:
        own_pg.start()
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    err = json.loads(res.stdout)
    assert "PostgreSQL" in json.dumps(err)


def test_upkeep_commands(shared_uri: str, tmp_path: Path) -> None:
    """compact merges the runs' small files, expire removes old snapshots: the rows stay."""
    with open_store(shared_uri, create=True) as st:
        for k in range(10, 14):
            ingest_path(st, recording(k, tmp_path))
    count = "SELECT count(*) AS n FROM kernel_launch"
    with connect(shared_uri, read_only=True) as db:
        before = db.query(count).to_pylist()
    res = CliRunner().invoke(main, ["lake", "compact", shared_uri, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["files_after"] < out["files_before"]
    future = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 60))
    res = CliRunner().invoke(main, ["lake", "expire", shared_uri, "--older-than", future,
                                    "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["snapshots_expired"] > 0 and out["snapshots_kept"] >= 1
    with connect(shared_uri, read_only=True) as db:
        assert db.query(count).to_pylist() == before
    # the snapshot list needs no pytz (the shared extra does not install it)
    res2 = subprocess.run([sys.executable, "-c", "import sys; sys.modules['pytz'] = None; "
                           "from argusdb.cli import main; main()", "runs", shared_uri,
                           "--snapshots", "--json"], capture_output=True, text=True, timeout=300)
    assert res2.returncode == 0, res2.stderr[-2000:]
    assert len(json.loads(res2.stdout)["rows"]) == out["snapshots_kept"]


#: The materialized tables, each row as text, in order (what a whole build must equal).
_BUILT = ("attribution_split", "region_attribution", "attribution_pc_line", "derived_evidence")


def _built(st: Store) -> dict[str, list[tuple[object, ...]]]:
    out = {t: st.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in _BUILT}
    out["materialization"] = st.sql(
        "SELECT name, program_version, fingerprint, runs_fingerprint, run_seq_built, n_rows "
        "FROM materialization ORDER BY ALL").fetchall()
    return out


@pytest.mark.parametrize("kind", ["embedded", "shared"])
def test_an_ingests_refresh_equals_a_whole_build(kind: str, shared_uri: str, tmp_path: Path
                                                 ) -> None:
    """The refresh an ingest runs (small inputs held in memory, the PC-line fold and the
    attribution of runs with nothing to fold or attribute skipped, materialization rows
    written at once) leaves what a refresh from nothing builds over the same inputs."""
    uri = shared_uri if kind == "shared" else str(tmp_path / "e.duckdb")
    with open_store(uri, create=True) as st:
        ingest_paths(st, list(demo.artefacts("softmax")), ProgramSource.from_path(PROG),
                     dict(demo.OPTIONS))
        for k in (1, 2):   # CUPTI runs of the version: nothing to fold, nothing to attribute
            assert not ingest_path(st, recording(k, tmp_path), ProgramSource.from_path(PROG)
                                   ).already
        got = _built(st)
        assert got["region_attribution"] and got["attribution_pc_line"]
        with st.transaction():
            st.sql("DELETE FROM materialization")
            materialize.refresh(st)   # told nothing: folds and attributes every run
        assert _built(st) == got
        if isinstance(st, SharedStore):
            assert not st.sql("SELECT table_name FROM duckdb_tables() WHERE temporary"
                              ).fetchall()   # what the refresh held is gone


def test_a_refresh_holds_its_small_inputs_as_the_transaction_sees_them(shared: Store,
                                                                        tmp_path: Path
                                                                        ) -> None:
    """Within a write the held ``run`` is the lake's with the transaction's own rows, and the
    query surface's views read it; after it they read the lake again."""
    assert isinstance(shared, SharedStore)
    ingest_path(shared, recording(1, tmp_path), ProgramSource.from_path(PROG))

    class Undo(Exception):
        pass

    seen: list[object] = []
    with pytest.raises(Undo), shared.transaction():
        shared.sql("INSERT INTO run SELECT * REPLACE ('held-1' AS run_id, 99 AS run_seq) "
                   "FROM lake.main.run")
        with shared.inputs_held():
            seen.append({t for (t,) in shared.sql("SELECT table_name FROM duckdb_tables() "
                                                  "WHERE temporary").fetchall()})
            seen.append(shared.sql("SELECT run_ids[-1] FROM attribution_input_state"
                                   ).fetchone())
        seen.append(shared.sql("SELECT table_name FROM duckdb_tables() WHERE temporary"
                               ).fetchall())
        raise Undo
    assert {"run", "program_version", "region_span"} <= seen[0]   # type: ignore[operator]
    assert seen[1] == ("held-1",) and seen[2] == []
    assert not shared.run_exists("held-1")
