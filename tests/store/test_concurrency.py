"""Many writers at once, a reader throughout: every run lands once, the reader never fails.

8 writer processes each ingest ARGUS_CONCURRENCY_RUNS distinct recordings (default 2 here; the
README's figure is the full 25 each, 200 runs; bench/bench_shared.py measures the throughput)
into one embedded store, then into one shared store, while a reader process asks a checked
question in a loop.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argusdb.store import open_store
from tests.conftest import ROOT
from tests.store.worker import BASE_LAUNCHES, recording

WRITERS = 8
RUNS = int(os.environ.get("ARGUS_CONCURRENCY_RUNS", "2"))
#: Wall-clock bound of the whole exercise, seconds (2 shared CPU cores in CI).
BOUND_S = float(os.environ.get("ARGUS_CONCURRENCY_BOUND_S", "900"))

READER = """
import sys, time
from pathlib import Path
from argusdb.api import connect
store, stop = sys.argv[1], Path(sys.argv[2])
last, n = -1, 0
while not stop.exists() or n == 0:
    with connect(store, read_only=True) as db:
        runs = db.query("SELECT count(*) AS n FROM run").to_pylist()[0]["n"]
        db.query("SELECT region_id, count(*) AS launches FROM evidence WHERE signal = "
                 "'duration' AND run_id IN (SELECT run_id FROM run WHERE timing_clean) "
                 "GROUP BY region_id, program_version")
    assert runs >= last, (runs, last)
    last, n = runs, n + 1
print('reads', n, 'last', last, flush=True)
"""


def _exercise(store: str, tmp_path: Path, reopen: bool) -> dict[str, float]:
    folder = tmp_path / "rec"
    folder.mkdir()
    for k in range(1, WRITERS * RUNS + 1):
        recording(k, folder)
    open_store(store, create=True).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARGUS_LOCK_TIMEOUT": "600"}
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, store, str(stop)], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    writers = [subprocess.Popen(
        [sys.executable, "-m", "tests.store.worker", store, str(1 + w * RUNS), str(RUNS),
         str(folder), *(["--reopen"] if reopen else [])], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(WRITERS)]
    outs = [w.communicate(timeout=BOUND_S) for w in writers]
    wall = time.monotonic() - t0
    stop.touch()
    r_out, r_err = reader.communicate(timeout=120)
    for w, (_out, err) in zip(writers, outs, strict=True):
        assert w.returncode == 0, err[-2000:]
    assert reader.returncode == 0, r_err[-2000:]
    landed = [ln.split() for o, _ in outs for ln in o.splitlines()]
    assert len(landed) == WRITERS * RUNS
    assert all(kind == "landed" for kind, _, _ in landed)
    with open_store(store, read_only=True) as st:
        rows = st.rows("SELECT r.run_id, r.run_seq, count(k.run_id) AS launches FROM run r "
                       "LEFT JOIN kernel_launch k USING (run_id) GROUP BY ALL")
        dup = st.sql("SELECT count(*) - count(DISTINCT artefact_sha256) FROM run").fetchone()
    assert len(rows) == WRITERS * RUNS
    assert dup == (0,)
    assert len({r["run_seq"] for r in rows}) == len(rows)
    by_run = {r["run_id"]: r["launches"] for r in rows}
    for _, k, run in landed:
        assert by_run[run] == BASE_LAUNCHES + int(k)   # whole, not partial
    assert wall < BOUND_S
    reads = int(next(ln for ln in r_out.splitlines() if ln.startswith("reads")).split()[1])
    print(f"\n{store.split()[0]}: {WRITERS}x{RUNS} runs in {wall:.1f} s "
          f"({WRITERS * RUNS / wall:.2f} runs/s), reader {reads} reads")
    return {"wall_s": wall, "reads": reads}


@pytest.mark.slow
def test_writers_into_one_embedded_store(tmp_path: Path) -> None:
    _exercise(str(tmp_path / "many.duckdb"), tmp_path, reopen=True)


@pytest.mark.slow
def test_writers_into_one_shared_store(shared_uri: str, tmp_path: Path) -> None:
    _exercise(shared_uri, tmp_path, reopen=False)


@pytest.mark.slow
def test_same_bytes_from_many_writers_land_once(shared_uri: str, tmp_path: Path) -> None:
    """Four processes ingest the same four recordings at once: each run lands exactly once."""
    folder = tmp_path / "rec"
    folder.mkdir()
    for k in range(1, 5):
        recording(k, folder)
    open_store(shared_uri, create=True).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.store.worker", shared_uri, "1", "4",
                               str(folder)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-1500:] for _, e in outs]
    lines = [ln.split() for o, _ in outs for ln in o.splitlines()]
    assert sum(1 for kind, _, _ in lines if kind == "landed") == 4
    assert len({run for _, _, run in lines}) == 4
    with open_store(shared_uri, read_only=True) as st:
        assert st.sql("SELECT count(*), count(DISTINCT run_id), count(DISTINCT run_seq) "
                      "FROM run").fetchone() == (4, 4, 4)
        assert st.sql("SELECT count(*) FROM kernel_launch").fetchone() == (
            4 * BASE_LAUNCHES + 1 + 2 + 3 + 4,)


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
