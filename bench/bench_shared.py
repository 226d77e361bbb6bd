"""The shared store in place, side by side with the embedded store (docs/shared-store.md).

Run: ``python -m bench.bench_shared PG_CONNINFO [--rows N] [--writers W] [--runs M]``.

1. A lake of ``--rows`` evidence rows: the demo's softmax ingest, its observed rows replicated
   by SQL into 50 synthetic runs' ids up to N rows (a lake's size, not a workload), then one
   more ingest of the demo (5 artefacts) into it and into an empty lake, each in a fresh
   ``argus ingest`` process: wall time and the process's peak RSS.
2. ``--writers`` processes × ``--runs`` distinct CUPTI recordings each, plus a reader asking a
   checked question in a loop, into one shared store and into one embedded store (the
   concurrency test's workers): wall time, runs landed, reader failures.
3. The README questions (launch timing, region breakdown) on the big lake and on an embedded
   copy of it (``argus copy``), each a fresh ``argus query`` process, best of 3.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from argusdb import demo
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from tests.store.worker import recording

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from argusdb.cli import main; main()"]
OPTS = [a for k, v in demo.OPTIONS.items() for a in ("--option", f"{k}={v}")]


def _uri(pg: str, tmp: Path, name: str) -> str:
    return (f"ducklake:postgres:{pg} metadata_schema=bench_{name}_{uuid.uuid4().hex[:8]} "
            f"data_path={tmp / name}/")


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``cmd`` (GNU time's maximum resident set)."""
    t0 = time.monotonic()
    res = subprocess.run(["/usr/bin/env", "python3", "-c",
                          "import resource, subprocess, sys; "
                          "r = subprocess.run(sys.argv[1:]); "
                          "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
                          "file=sys.stderr); sys.exit(r.returncode)", *cmd],
                         cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t0
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd[3:6])} failed: {res.stderr[-2000:]}")
    return wall, int(res.stderr.strip().splitlines()[-1]) / 1024


def _ingest_cmd(store: str) -> list[str]:
    return [*CLI, "ingest", store, *map(str, demo.artefacts("softmax")), "--program",
            str(demo.KERNELS_DIR / "softmax.py"), *OPTS, "--json"]


def big_lake(pg: str, tmp: Path, rows: int) -> str:
    uri = _uri(pg, tmp, "big")
    with open_store(uri, create=True) as st:
        ingest_path(st, recording(1, tmp / "rec"))
        have = st.sql("SELECT count(*) FROM observed_evidence").fetchone()
        per = int(have[0]) if have else 1
        step = max(1, 2_000_000 // per)
        copies = max(0, rows // per - 1)
        for done in range(0, copies, step):   # one DuckLake commit per ~2 M rows
            n = min(step, copies - done)
            with st.transaction():
                st.sql("INSERT INTO observed_evidence SELECT o.* REPLACE (evidence_id + "
                       "(i + 1) * (1::BIGINT << 40) AS evidence_id, 'bulk-' || (i % 50) AS "
                       f"run_id) FROM observed_evidence AS o, range({done}, {done + n}) AS "
                       "r(i) WHERE o.run_id NOT LIKE 'bulk-%'")
    return uri


def writers(store: str, tmp: Path, w: int, m: int) -> dict[str, float]:
    folder = tmp / f"rec-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    for k in range(1, w * m + 1):
        recording(k, folder)
    open_store(store, create=True).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARGUS_LOCK_TIMEOUT": "600"}
    stop = tmp / f"stop-{uuid.uuid4().hex[:6]}"
    from tests.store.test_concurrency import READER
    reader = subprocess.Popen([sys.executable, "-c", READER, store, str(stop)], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "tests.store.worker", store,
                               str(1 + i * m), str(m), str(folder)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(w)]
    outs = [p.communicate() for p in procs]
    wall = time.monotonic() - t0
    stop.touch()
    r_out, _ = reader.communicate(timeout=300)
    landed = sum(o.count("landed") for o, _ in outs)
    return {"wall_s": round(wall, 1), "runs_landed": landed, "runs_per_s": round(landed / wall, 3),
            "writer_failures": sum(p.returncode != 0 for p in procs),
            "reader_ok": reader.returncode == 0, "reader": r_out.strip()}


def questions(store: str) -> dict[str, float]:
    out = {}
    for name, q in (("launch_timing", demo.QUESTION), ("region_breakdown",
                                                       demo.REGION_BREAKDOWN)):
        out[name] = round(min(_timed([*CLI, "query", store, q, "--json"])[0]
                              for _ in range(3)), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pg")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-shared-"))
    (tmp / "rec").mkdir()
    report: dict[str, object] = {"rows": a.rows, "load_before": os.getloadavg()}
    t0 = time.monotonic()
    big = big_lake(a.pg, tmp, a.rows)
    with open_store(big, read_only=True) as st:
        n = st.sql("SELECT count(*) FROM evidence").fetchone()
    report["lake_evidence_rows"] = int(n[0]) if n else 0
    report["build_s"] = round(time.monotonic() - t0, 1)
    empty = _uri(a.pg, tmp, "empty")
    open_store(empty, create=True).close()
    e_wall, e_rss = _timed(_ingest_cmd(empty))
    b_wall, b_rss = _timed(_ingest_cmd(big))
    report["ingest"] = {"empty_s": round(e_wall, 2), "empty_rss_mib": round(e_rss),
                        "big_s": round(b_wall, 2), "big_rss_mib": round(b_rss),
                        "ratio": round(b_wall / e_wall, 2)}
    emb = str(tmp / "copy.duckdb")
    subprocess.run([*CLI, "copy", big, emb], cwd=ROOT, check=True, capture_output=True)
    lq, eq = questions(big), questions(emb)
    report["questions"] = {"lake_s": lq, "embedded_s": eq,
                           "ratio": {k: round(lq[k] / eq[k], 2) for k in lq}}
    sh = writers(_uri(a.pg, tmp, "w"), tmp, a.writers, a.runs)
    em = writers(str(tmp / "w.duckdb"), tmp, a.writers, a.runs)
    report["writers"] = {"n": a.writers, "runs_each": a.runs, "shared": sh, "embedded": em,
                         "throughput_ratio": round(sh["runs_per_s"] / em["runs_per_s"], 2)}
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
