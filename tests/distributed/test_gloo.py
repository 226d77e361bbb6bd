"""A real torch.distributed program on the gloo backend (CPU), 2 and 4 ranks, through the
recorder (argusdb.observe.launch.rank_boot), ingested as one launch group per launch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.ingest.ranks import ingest_launch
from argusdb.store import open_store
from argusdb.store.embedded import Store

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tools" / "h200" / "xlayer" / "tp_block.py"
SMALL = ["--steps", "3", "--warmup", "1", "--tokens", "64", "--hidden", "32", "--ffn", "64",
         "--chunks", "2"]


def launch(out: Path, nproc: int, mode: str, group: str) -> Path:
    env = {**os.environ, "ARGUS_DIST_MODE": mode, "ARGUS_DIST_OUT": str(out),
           "ARGUS_LAUNCH_GROUP": group, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
           "--standalone", "-m", "argusdb.observe.launch.rank_boot", str(PROGRAM),
           "--version", "serial", *SMALL]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch.distributed")
    base = tmp_path_factory.mktemp("gloo")
    return {"events2": launch(base / "e2", 2, "events", "g-e2"),
            "events4": launch(base / "e4", 4, "events", "g-e4"),
            "profiler2": launch(base / "p2", 2, "profiler", "g-p2")}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = open_store(tmp_path / "s.duckdb", create=True)
    yield st
    st.close()


@pytest.mark.parametrize(("key", "n"), [("events2", 2), ("events4", 4)])
def test_ranks_launch_group_and_collective_keys(recorded: dict[str, Path], store: Store,
                                                key: str, n: int) -> None:
    res = ingest_launch(store, recorded[key], program=ProgramSource.from_path(PROGRAM),
                        options={"version": "serial"})
    assert res.world_size == n and len(res.runs) == n
    runs = store.rows("SELECT rank, world_size, launch_group, timing_clean, signature FROM run "
                      "ORDER BY rank")
    assert [r["rank"] for r in runs] == list(range(n))
    assert {(r["world_size"], r["launch_group"], r["timing_clean"]) for r in runs} == \
        {(n, f"g-e{n}", True)}
    # every evidence row carries its run's rank
    bad = store.rows("SELECT count(*) AS n FROM evidence e JOIN run r USING (run_id) "
                     "WHERE e.rank <> r.rank::VARCHAR")
    assert bad == [{"n": 0}]
    # the same (pg, seq, op) on every rank: one joinable instance
    per = store.rows("SELECT pg, seq, op, count(DISTINCT rank) AS ranks, "
                     "count(DISTINCT bytes) AS sizes FROM collective GROUP BY ALL")
    assert per and all(r["ranks"] == n for r in per)
    assert {r["op"] for r in per} >= {"allgather", "allreduce"}
    # allgather of 64/n x 32 fp32 per rank into 64 x 32: 8192 bytes, the same on every rank
    ag = store.rows("SELECT DISTINCT bytes, in_nelems, out_nelems FROM collective "
                    "WHERE op = 'allgather'")
    assert ag == [{"bytes": 8192, "in_nelems": 64 * 32 // n, "out_nelems": 64 * 32}]
    al = store.rows("SELECT rank, n_matched, error_ns FROM clock_alignment ORDER BY rank")
    assert [a["rank"] for a in al] == list(range(n))
    assert all(a["n_matched"] == len(per) for a in al)
    inst = store.rows("SELECT DISTINCT n_ranks_seen FROM collective_instance")
    assert inst == [{"n_ranks_seen": n}]
    assert len(store.rows("SELECT * FROM critical_rank WHERE is_critical")) == 1
    # on a CPU the program is synchronous: no compute covers a collective
    exp = store.rows("SELECT count(*) AS n, sum(covered_ns) AS covered FROM "
                     "interval_exposed('collective', 'compute')")
    assert exp[0]["n"] == len(per) * n and exp[0]["covered"] == 0
    steps = store.rows("SELECT count(*) AS n FROM step_overlap")
    assert steps == [{"n": 4 * n}]  # 1 warm-up + 3 measured steps per rank


def test_profiler_trace_is_not_clean_and_has_gloo_collectives(recorded: dict[str, Path],
                                                               store: Store) -> None:
    ingest_launch(store, recorded["profiler2"])
    runs = store.rows("SELECT rank, timing_clean, torch_profiler, launch_group FROM run "
                      "ORDER BY rank")
    assert runs == [{"rank": r, "timing_clean": False, "torch_profiler": True,
                     "launch_group": "g-p2"} for r in (0, 1)]
    ops = store.rows("SELECT op, count(*) AS n FROM collective WHERE rank = 0 GROUP BY op "
                     "ORDER BY op")
    assert {o["op"]: o["n"] for o in ops}["allgather"] == 4
    assert store.rows("SELECT count(*) AS n FROM trace_span WHERE kind = 'host_op'")[0]["n"] > 0


def test_a_missing_rank_is_refused_and_nothing_written(recorded: dict[str, Path],
                                                       store: Store) -> None:
    files = sorted(recorded["events4"].glob("*.spans.jsonl"))[:3]
    with pytest.raises(InputError, match=r"ranks \[0, 1, 2\], not of all 4"):
        ingest_launch(store, files)
    assert store.rows("SELECT count(*) AS n FROM run") == [{"n": 0}]
