"""The shared store (DuckLake on PostgreSQL): every command, crashes, time travel, copies."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb import demo
from argusdb.api import connect
from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import StoreError
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from argusdb.store.embedded import Store
from argusdb.store.versions import schema_tables
from tests.conftest import DATA, ROOT
from tests.store.conftest import lake_uri
from tests.store.worker import BASE_LAUNCHES, recording

LN = DATA / "attribution"
#: The attributed answer whose split a new mapping run changes (layer norm: tl.sum shared by
#: the 'mean' and 'var' regions; tests/data/attribution/README.md).
SPLIT = ("SELECT region_id, signal, sum(value) AS value, max(association_entropy) AS entropy "
         "FROM evidence WHERE evidence_class = 'attributed' GROUP BY ALL ORDER BY ALL")


def _demo(store: Store, kernel: str = "softmax") -> None:
    prog = ProgramSource.from_path(demo.KERNELS_DIR / f"{kernel}.py")
    for p in demo.artefacts(kernel):
        ingest_path(store, p, prog, dict(demo.OPTIONS))


def test_commands_take_a_store_uri(shared_uri: str, tmp_path: Path) -> None:
    cli = CliRunner()
    assert cli.invoke(main, ["init", shared_uri]).exit_code == 0
    prog = demo.KERNELS_DIR / "softmax.py"
    paths = [str(p) for p in demo.artefacts("softmax")]
    opts = [a for k, v in demo.OPTIONS.items() for a in ("--option", f"{k}={v}")]
    res = cli.invoke(main, ["ingest", shared_uri, *paths, "--program", str(prog), *opts,
                            "--json"])
    assert res.exit_code == 0, res.output
    again = cli.invoke(main, ["ingest", shared_uri, paths[0], "--program", str(prog), *opts,
                              "--json"])
    assert json.loads(again.output)["runs"][0]["already_ingested"] is True
    res = cli.invoke(main, ["query", shared_uri, demo.QUESTION, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["rows"] == [["softmax/softmax_fwd", 20, 32.544, 32.223,
                                               34.848]]
    runs = json.loads(cli.invoke(main, ["runs", shared_uri, "--json"]).output)["rows"]
    assert len(runs) == len(paths) + 1  # + the timeline run of torch's kernels (CUPTI)
    snaps = json.loads(cli.invoke(main, ["runs", shared_uri, "--snapshots", "--json"]).output)
    landed = [r for _, _, kind, r in snaps["rows"] if kind == "ingest"]
    assert sorted(x for r in landed for x in r) == sorted(r[0] for r in runs)
    version = runs[0][1]
    res = cli.invoke(main, ["report", shared_uri, "--region", "softmax/softmax_fwd",
                            "--version", version, "--json"])
    assert res.exit_code == 0, res.output
    res = cli.invoke(main, ["diff", shared_uri, "--region", "softmax/softmax_fwd", "--from",
                            version, "--to", version, "--json"])
    assert res.exit_code == 0, res.output
    res = cli.invoke(main, ["export", shared_uri, str(tmp_path / "x.json"), "--format",
                            "perfetto", "--run", runs[0][0]])
    assert res.exit_code == 0, res.output
    res = cli.invoke(main, ["dashboard", shared_uri, "--out", str(tmp_path / "dash")])
    assert res.exit_code == 0, res.output
    assert any((tmp_path / "dash").iterdir())


def test_shared_answers_equal_embedded(shared: Store, tmp_path: Path) -> None:
    emb = tmp_path / "e.duckdb"
    with open_store(emb, create=True) as st:
        _demo(st)
    _demo(shared)
    with connect(emb, read_only=True) as a, connect(shared.path, read_only=True) as b:
        for q in (demo.QUESTION, demo.REGION_BREAKDOWN, SPLIT):
            assert a.query(q).to_pylist() == b.query(q).to_pylist()


def test_errors_name_the_problem(pg: str, tmp_path: Path) -> None:
    uri = lake_uri(pg, tmp_path)
    with pytest.raises(StoreError, match="no argusdb store there yet"):
        open_store(uri)
    no_data = uri.split(" data_path=")[0]
    with pytest.raises(StoreError, match="add data_path=DIR"):
        open_store(no_data, create=True)
    with pytest.raises(StoreError, match="check that PostgreSQL is running"):
        open_store("ducklake:postgres:host=127.0.0.1 port=1 dbname=x data_path=/tmp/x",
                   create=True)
    res = CliRunner().invoke(main, ["runs", uri])
    assert res.exit_code == 2 and "argus init" in res.output and "Traceback" not in res.output


def _time_travel(path: str) -> None:
    prog = ProgramSource.from_path(LN / "kernels" / "layernorm.py")
    with open_store(path, create=True) as st:
        for p in ("layernorm.ttgir", "layernorm.sass", "layernorm.source.csv"):
            ingest_path(st, LN / p, prog, {"target": "sm_90"})
        snap = str(st.snapshots()[-1]["snapshot_id"])
    with connect(path, read_only=True) as db:
        before = db.query(SPLIT).to_pylist()
    stamp = time.time()
    time.sleep(0.05)
    with open_store(path) as st:     # the independent mapping run: shared lines split anew
        ingest_path(st, LN / "layernorm.counts.source.csv", prog, {"target": "sm_90"})
    with connect(path, read_only=True) as db:
        after = db.query(SPLIT).to_pylist()
    assert after != before
    for as_of in (snap, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp))
                  + f".{int(stamp % 1 * 1e6):06d}"):
        with connect(path, read_only=True, as_of=as_of) as db:
            assert db.query(SPLIT).to_pylist() == before
    res = CliRunner().invoke(main, ["query", path, SPLIT, "--as-of", snap, "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)["rows"]) == len(before)


def test_time_travel_embedded(tmp_path: Path) -> None:
    _time_travel(str(tmp_path / "tt.duckdb"))


def test_time_travel_shared(shared_uri: str) -> None:
    _time_travel(shared_uri)


def test_as_of_errors(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    with open_store(db, create=True) as st:
        _demo(st)
    for bad, msg in (("99", "no snapshot 99"), ("yesterday", "neither a snapshot number"),
                     ("2000-01-01", "no snapshot at or before")):
        res = CliRunner().invoke(main, ["query", str(db), demo.QUESTION, "--as-of", bad])
        assert res.exit_code == 2 and msg in res.output, res.output


def _tables(path: str) -> dict[str, list[tuple[object, ...]]]:
    with open_store(path, read_only=True) as st:
        return {t: sorted(st.sql(f"SELECT * FROM {t}").fetchall(), key=repr)
                for t in schema_tables() if t != "store_meta"}


def test_copy_round_trip_is_lossless(pg: str, tmp_path: Path) -> None:
    emb = str(tmp_path / "src.duckdb")
    with open_store(emb, create=True) as st:
        _demo(st)
        prog = ProgramSource.from_path(LN / "kernels" / "layernorm.py")
        for p in ("layernorm.ttgir", "layernorm.sass", "layernorm.source.csv",
                  "layernorm.counts.source.csv"):
            ingest_path(st, LN / p, prog, {"target": "sm_90"})
    lake = lake_uri(pg, tmp_path)
    back = str(tmp_path / "back.duckdb")
    res = CliRunner().invoke(main, ["copy", emb, lake])
    assert res.exit_code == 0, res.output
    assert CliRunner().invoke(main, ["copy", lake, back]).exit_code == 0
    src, mid, out = _tables(emb), _tables(lake), _tables(back)
    assert sum(len(v) for v in src.values()) > 10000
    assert src == mid == out
    with connect(emb, read_only=True) as a, connect(back, read_only=True) as b, \
            connect(lake, read_only=True) as c:
        for q in (demo.QUESTION, SPLIT):
            assert a.query(q).to_pylist() == b.query(q).to_pylist() == c.query(q).to_pylist()
    res = CliRunner().invoke(main, ["copy", emb, back])
    assert res.exit_code == 2 and "already holds" in res.output


#: Writers killed here (bench/bench_shared_faults.py kills 10 and restarts PostgreSQL 10 times).
KILLS = int(os.environ.get("ARGUS_KILLS", "3"))


@pytest.mark.slow
def test_kill_9_during_shared_ingests(shared_uri: str, tmp_path: Path) -> None:
    """Writers killed at random points: no partial run, nothing committed before is lost."""
    folder = tmp_path / "rec"
    folder.mkdir()
    open_store(shared_uri, create=True).close()
    rng = random.Random(14)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    committed: dict[str, int] = {}
    k = 1
    for _ in range(KILLS):
        for j in range(k, k + 4):
            recording(j, folder)
        proc = subprocess.Popen([sys.executable, "-m", "tests.store.worker", shared_uri, str(k),
                                 "4", str(folder)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        time.sleep(rng.uniform(3.0, 9.0))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        for line in out.splitlines():
            _, kk, run = line.split()
            committed[run] = int(kk)
        k += 4
    with open_store(shared_uri, read_only=True) as st:
        rows = {r["run_id"]: r["launches"] for r in st.rows(
            "SELECT r.run_id, count(k.run_id) AS launches FROM run r "
            "LEFT JOIN kernel_launch k USING (run_id) GROUP BY ALL")}
        orphans = st.sql("SELECT count(*) FROM kernel_launch WHERE run_id NOT IN "
                         "(SELECT run_id FROM run)").fetchone()
    assert set(committed) <= set(rows)              # nothing reported committed is lost
    assert orphans == (0,)                          # no rows of a run that did not commit
    arts = {r: kk for r, kk in committed.items()}
    for run, n in rows.items():                     # every run whole
        assert n > BASE_LAUNCHES
        if run in arts:
            assert n == BASE_LAUNCHES + arts[run]
    print(f"\n{KILLS} kills, {len(rows)} runs landed, {len(committed)} reported")


def test_v2_lake_migrates_on_a_writable_open(shared_uri: str) -> None:
    """A schema-2 lake (kernel_launch without the api_* columns) opens read-only as it is
    (the columns read NULL) and migrates in one commit on a writable open."""
    from argusdb.store.embedded import SCHEMA_VERSION
    from argusdb.store.shared import LakeUri, _lake_connect
    from tests.store.test_embedded import API_COLUMNS, TIMING

    forced = TIMING.parents[1] / "cupti_timing.forced_wait" / "timing.818.cupti.jsonl"

    with open_store(shared_uri, create=True) as st:
        ingest_path(st, TIMING)
    lake = _lake_connect(LakeUri.parse(shared_uri), read_only=False)
    for c in API_COLUMNS:
        lake.execute(f"ALTER TABLE lake.kernel_launch DROP COLUMN {c}")
    lake.execute("UPDATE lake.store_meta SET value = '2' WHERE key = 'schema_version'")
    lake.close()
    count = ("SELECT count(*) AS n, count(api_start_ns) AS api FROM kernel_launch "
             "WHERE launch_api IS NOT NULL")
    with open_store(shared_uri, read_only=True) as st:
        assert st.rows(count) == [{"n": 135, "api": 0}]
    with open_store(shared_uri) as st:   # writable: migrates, then ingests with the calls
        version = st.lake.execute("SELECT value FROM lake.store_meta "  # type: ignore[attr-defined]
                                  "WHERE key = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),)
        ingest_path(st, forced)
    with open_store(shared_uri, read_only=True) as st:
        assert st.rows(count) == [{"n": 135 + 177, "api": 177}]
        assert "migrate" in {s["kind"] for s in st.snapshots()}


def test_checks_are_kept_per_lake_snapshot(shared_uri: str, tmp_path: Path) -> None:
    """A question asked again of the same snapshot runs without the checker (in another
    connection, as in another process); a new snapshot is judged afresh; an --as-of open of
    the first snapshot finds the check kept under it."""
    from argusdb.api import kept

    with open_store(shared_uri, create=True) as st:
        _demo(st)
        first = str(st.snapshots()[-1]["snapshot_id"])
    with connect(shared_uri, read_only=True) as db:
        rows, _ = db.query_rows(demo.QUESTION)
        assert not isinstance(db._checked(demo.QUESTION, across=True), kept.KeptCheck)
    with connect(shared_uri, read_only=True) as db:
        assert isinstance(db._checked(demo.QUESTION, across=True), kept.KeptCheck)
        assert db.query_rows(demo.QUESTION)[0] == rows
    with open_store(shared_uri) as st:
        ingest_path(st, recording(1, tmp_path),
                    ProgramSource.from_path(demo.KERNELS_DIR / "softmax.py"))
    with connect(shared_uri, read_only=True) as db:
        assert not isinstance(db._checked(demo.QUESTION, across=True), kept.KeptCheck)
    with connect(shared_uri, read_only=True, as_of=first) as db:
        assert isinstance(db._checked(demo.QUESTION, across=True), kept.KeptCheck)
        assert db.query_rows(demo.QUESTION)[0] == rows
    with connect(shared_uri) as db:   # a writer keeps nothing across processes
        assert db._store_identity() is None
