"""Check overhead of the interval algebra in checked queries, against a peer question over
``evidence`` on the same store.

Builds a store from the recorded 2-H200 torchrun launches of ``tools/h200/xlayer/tp_block.py``
(``tests/data/gpu/xlayer``: the serial version's clean, profiled and forced launches and the
overlapped version's clean launch), then times ``checker.check`` and ``checker.execute`` of
questions over the interval macros (median of ``--repeat`` after one warm-up) and a
connection's first check. Prints each check's time as a ratio to the peer's.

Usage:
    python bench/bench_interval_checks.py [--repeat 5] [--store PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from argusdb.api import checked
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest.ranks import ingest_launch
from argusdb.store import materialize, open_store
from argusdb.store.embedded import Store

ROOT = Path(__file__).resolve().parents[1]
XL = ROOT / "tests" / "data" / "gpu" / "xlayer"
LAUNCHES = (("serial", ("events", "profiler", "forced")), ("overlap", ("events",)))
QUESTIONS = {
    "span join, one launch":
        "SELECT rank, a_name, b_name, sum(dur_ns) FROM interval_span_join('collective', "
        "'compute') WHERE launch_group = 'xl-overlap-events-1' GROUP BY ALL",
    "exposed part, clean launches by version":
        "SELECT program_version, rank, sum(exposed_ns) FROM interval_exposed('collective', "
        "'compute') WHERE timing_clean GROUP BY ALL",
    "span join by hand over two unions":
        "SELECT c.rank, sum(least(c.end_ns, k.end_ns) - greatest(c.start_ns, k.start_ns)) "
        "FROM interval_union('communication') c JOIN interval_union('compute') k "
        "ON k.run_id = c.run_id AND k.start_ns < c.end_ns AND c.start_ns < k.end_ns "
        "WHERE c.launch_group = 'xl-overlap-events-1' GROUP BY c.rank",
}
PEER = ("SELECT e.rank, median(value) FROM evidence e JOIN run r USING (run_id) "
        "WHERE r.timing_clean AND e.signal = 'step_time' GROUP BY e.rank, e.program_version")


def build(path: Path) -> None:
    src = ProgramSource.from_path(ROOT / "tools" / "h200" / "xlayer" / "tp_block.py")
    with open_store(path, create=True) as st:
        for version, modes in LAUNCHES:
            for mode in modes:
                ingest_launch(st, XL / f"xl-{version}-{mode}-1", src,
                              {"version": version, "target": "sm_90"})
        with st.transaction():
            materialize.refresh(st)


def timed(sql: str, st: Store, repeat: int) -> tuple[float, float, float]:
    """Median wall ms of the check and of check + run, and median CPU ms of the check (this
    process's CPU time: less sensitive than wall time to other jobs on the machine)."""
    assert checked.check(sql, st) == [], sql
    ck, cpu, ex = [], [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        checked.check(sql, st)
        ck.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        t = time.perf_counter()
        checked.execute(sql, st)
        ex.append(time.perf_counter() - t)
    return (statistics.median(ck) * 1e3, statistics.median(ex) * 1e3,
            statistics.median(cpu) * 1e3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--store", type=Path, default=None)
    a = ap.parse_args()
    path = a.store or Path(tempfile.mkdtemp()) / "intervals.duckdb"
    if not path.exists():
        build(path)
    print(f"load average {os.getloadavg()[0]:.1f}")
    with open_store(path, read_only=True) as st:
        n = st.rows("SELECT count(*) AS n FROM interval_event")[0]["n"]
        t = time.perf_counter()
        checked.check(next(iter(QUESTIONS.values())), st)
        first = (time.perf_counter() - t) * 1e3
        peer_ck, peer_ex, peer_cpu = timed(PEER, st, a.repeat)
        print(f"{n} intervals; a connection's first check {first:.0f} ms")
        print(f"peer (evidence): check {peer_ck:.1f} ms ({peer_cpu:.1f} ms CPU), end to end "
              f"{peer_ex:.1f} ms")
        for name, sql in QUESTIONS.items():
            ck, ex, cpu = timed(sql, st, a.repeat)
            print(f"{name}: check {ck:.1f} ms ({ck / peer_ck:.2f}x the peer's; {cpu:.1f} ms "
                  f"CPU, {cpu / peer_cpu:.2f}x), end to end {ex:.1f} ms, check share "
                  f"{100 * ck / ex:.1f} %")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
