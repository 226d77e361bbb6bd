"""Runaway queries on one long-lived read-write connection: each ends before its call returns,
and the process keeps its threads and memory, so later questions answer.

Before, a query still inside an operator that ignores its interrupt was left running in the
background: ~18 of them took one ``argusdb.connect(path)`` from 1.0 to 6.3 GB of address space
and 7 to 10 threads until every later query failed, ``SELECT 1`` included. The series runs in a
subprocess (the process measures itself from ``/proc/self/status``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BOMBS = [
    # recursive string doubling (2^40 characters if it ran to its end)
    "WITH RECURSIVE t AS (SELECT 'x' AS s, 0 AS n UNION ALL "
    "SELECT s || s AS s, n + 1 AS n FROM t WHERE n < 40) SELECT max(length(s)) AS m FROM t",
    # one 2 GiB string, built without looking at the interrupt
    "SELECT length(repeat('x', 2147483648)) AS n",
    # a huge range
    "SELECT sum(i) AS s FROM range(1000000000000) t(i)",
    # a cross join of two large ranges (its build side held by DuckDB's worker thread)
    "SELECT count(*) AS n FROM range(100000000) a(i), range(100000000) b(j)",
]

_SERIES = r'''
import json, sys, threading, time
import argusdb
from argusdb.errors import ArgusError

db, bombs, rounds = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])

def status():
    f = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(f["VmRSS"].split()[0]) * 1024, int(f["Threads"])

con = argusdb.connect(db, timeout_s=1)
ordinary = ["SELECT 1 AS one", "SELECT count(*) AS n FROM run",
            "SELECT signal, count(*) AS n FROM evidence GROUP BY signal ORDER BY signal"]
for q in ordinary * 20:
    con.query(q)
out = {"start": status(), "bombs": [], "rounds": []}
for r in range(rounds):
    for q in (bombs if r == 0 else [b for b in bombs if "repeat" not in b]):
        t0 = time.monotonic()
        try:
            con.query(q)
            what = "answered"
        except ArgusError as exc:
            what = type(exc).__name__ + ": " + str(exc)
        except Exception as exc:
            what = "RAW " + type(exc).__name__ + ": " + str(exc)
        left = [t.name for t in threading.enumerate() if t.name == "argus-query"]
        out["bombs"].append({"sql": q, "s": time.monotonic() - t0, "what": what,
                             "left": left})
    out["rounds"].append(status())
answered = 0
for q in ordinary * 100:
    answered += con.query(q).num_rows > 0
out["answered"] = answered
out["one"] = con.query("SELECT 1 AS one").to_pylist()
out["end"] = status()
con.close()
print(json.dumps(out))
'''


@pytest.mark.slow
def test_bomb_series_on_one_read_write_connection(softmax_db: Path) -> None:
    rounds = 4
    proc = subprocess.run([sys.executable, "-c", _SERIES, str(softmax_db), json.dumps(BOMBS),
                           str(rounds)], cwd=ROOT, capture_output=True, text=True, timeout=550)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    for b in out["bombs"]:
        # an argusdb error (stopped, or DuckDB's own memory error), never a raw one
        assert b["what"].startswith("QueryFailed: "), b
        assert "ran longer than 1 s" in b["what"] or "Out of Memory" in b["what"], b
        assert not b["left"], b    # nothing of it runs on after the call returned
    assert out["answered"] == 300 and out["one"] == [{"one": 1}]
    (rss0, threads0), (rss_end, threads_end) = out["start"], out["end"]
    assert threads_end <= threads0 + 1, out
    # Memory does not grow with the number of runaway queries: after the last round about
    # what it was after the rounds before it (what DuckDB's worker thread holds of the last
    # one). The first round is a warm-up: where a stopped bomb leaves DuckDB's buffers
    # depends on how far it got in its second, so one later round may sit higher than it.
    rss = [r for r, _ in out["rounds"]]
    before = max(rss[1:-1])
    assert rss[-1] <= before * 1.1 + 64 * 2**20, out["rounds"]
    assert rss_end <= max(before, rss0) * 1.1 + 64 * 2**20, out
    print(f"\nRSS {rss0 / 2**20:.0f} -> {rss_end / 2**20:.0f} MiB, threads {threads0} -> "
          f"{threads_end}; rounds {[round(r / 2**20) for r, _ in out['rounds']]} MiB; "
          f"bombs {[round(b['s'], 1) for b in out['bombs']]} s")
