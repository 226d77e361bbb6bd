"""The shared store in place, side by side with the embedded store (docs/shared-store.md).

Run: ``python -m bench.bench_shared PG_CONNINFO [--pages P] [--timing T] [--keep PATH]
[--writers W] [--runs M] [--out JSON]``.

1. A big store: ``bench/bench_diff.py``'s (the real H200 matmul recordings of
   ``tests/data/gpu``: the CUPTI timing runs of three configurations, ``--timing`` each, and
   ``--pages`` Nsight Compute source-page runs, each a run of its own with its own evidence
   ids and listing, attributed like real ingests), built as an embedded file (``--keep``
   reuses one), then copied whole into a new lake (``argus copy``): the lake and its embedded
   peer hold the same rows.
2. The README questions (launch timing, region breakdown) and ``argus diff`` of
   ``matmul/matmul_kernel`` between two configurations, each a fresh ``argus`` process, on the
   big lake and on the embedded file, best of 3 (wall and CPU), and whether both answered
   the same.
3. One more ingest of the demo (5 softmax artefacts), a fresh ``argus ingest`` process, into
   the big lake and into an empty lake: wall and CPU seconds and the process's peak RSS.
4. ``--writers`` processes × ``--runs`` distinct CUPTI recordings each, plus a reader asking a
   checked question in a loop, into one new shared store and into one new embedded store (the
   concurrency test's workers): wall time, runs landed, reader failures.
Prints one JSON object (and writes it to ``--out``).
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
from typing import Any

from argusdb import demo
from argusdb.store import open_store
from argusdb.store.copy import copy_store
from tests.store.worker import recording

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from argusdb.cli import main; main()"]
OPTS = [a for k, v in demo.OPTIONS.items() for a in ("--option", f"{k}={v}")]


def _uri(pg: str, tmp: Path, name: str) -> str:
    return (f"ducklake:postgres:{pg} metadata_schema=bench_{name}_{uuid.uuid4().hex[:8]} "
            f"data_path={tmp / name}/")


def _timed(cmd: list[str], check: bool = True) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MiB) and stdout of ``cmd``."""
    t0 = time.monotonic()
    res = subprocess.run(["/usr/bin/env", "python3", "-c",
                          "import resource, subprocess, sys; "
                          "r = subprocess.run(sys.argv[1:]); "
                          "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
                          "print(u.ru_utime + u.ru_stime, u.ru_maxrss, file=sys.stderr); "
                          "sys.exit(r.returncode)", *cmd],
                         cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t0
    if res.returncode and check:
        raise SystemExit(f"{' '.join(cmd[3:6])} failed: {res.stderr[-2000:]}")
    cpu, rss = res.stderr.strip().splitlines()[-1].split()
    return wall, float(cpu), int(rss) / 1024, res.stdout


def _ingest_cmd(store: str) -> list[str]:
    return [*CLI, "ingest", store, *map(str, demo.artefacts("softmax")), "--program",
            str(demo.KERNELS_DIR / "softmax.py"), *OPTS, "--json"]


def big_lake(pg: str, tmp: Path, pages: int, timing: int, keep: Path | None
             ) -> tuple[str, str, dict[str, float]]:
    """The big embedded store (built, or ``keep`` reused) and its copy into a new lake."""
    from bench.bench_diff import build

    emb = keep or tmp / "big.duckdb"
    took: dict[str, float] = {}
    if not emb.exists():
        t0 = time.monotonic()
        build(emb, pages, timing)
        took["build_s"] = round(time.monotonic() - t0, 1)
    uri = _uri(pg, tmp, "big")
    t0 = time.monotonic()
    copy_store(str(emb), uri)
    took["copy_s"] = round(time.monotonic() - t0, 1)
    return str(emb), uri, took


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


def questions(store: str) -> dict[str, dict[str, Any]]:
    """Each question as a fresh ``argus`` process, best of 3: wall and CPU seconds, and its
    answer (the ``--json`` rows, or the refusal)."""
    out = {}
    for name, args in (("launch_timing", ["query", store, demo.QUESTION, "--json"]),
                       ("region_breakdown", ["query", store, demo.REGION_BREAKDOWN, "--json"]),
                       ("diff", ["diff", store, "--region", "matmul/matmul_kernel", "--from",
                                 "config=bk64_s3", "--to", "config=bn256_s3", "--json"])):
        runs = [_timed([*CLI, *args], check=False) for _ in range(3)]
        doc = json.loads(runs[0][3])
        out[name] = {"wall_s": round(min(r[0] for r in runs), 2),
                     "cpu_s": round(min(r[1] for r in runs), 2),
                     "rss_mib": round(max(r[2] for r in runs)),
                     # rows as a sorted list: rows tied on the ORDER BY come in any order
                     "answer": sorted(json.dumps(r) for r in doc["rows"]) if doc.get("ok")
                     else doc.get("errors")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pg")
    ap.add_argument("--pages", type=int, default=410, help="source-page runs (~50 k rows each)")
    ap.add_argument("--timing", type=int, default=200, help="timing runs per configuration")
    ap.add_argument("--keep", type=Path, help="build (or reuse) the embedded store here")
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-shared-"))
    report: dict[str, object] = {"load_before": os.getloadavg()}
    emb, big, took = big_lake(a.pg, tmp, a.pages, a.timing, a.keep)
    report.update(took)
    with open_store(big, read_only=True) as st:
        row = st.sql("SELECT (SELECT count(*) FROM observed_evidence), (SELECT "
                     "sum(n_source_rows) FROM region_attribution), (SELECT count(*) FROM "
                     "region_attribution), (SELECT count(*) FROM run)").fetchone()
    assert row is not None
    # as bench_diff counts them: observed values + the attributed source values
    report["lake_evidence_rows"] = int(row[0]) + int(row[1])
    report["lake_observed_rows"], report["lake_region_attribution_rows"] = int(row[0]), \
        int(row[2])
    report["lake_runs"] = int(row[3])
    # the questions first: the ingest below adds the demo's runs to the lake alone
    lq, eq = questions(big), questions(emb)
    report["questions"] = {
        "lake": lq, "embedded": eq,
        "same_answer": {k: lq[k].pop("answer") == eq[k].pop("answer") for k in lq},
        "ratio": {k: round(lq[k]["wall_s"] / eq[k]["wall_s"], 2) for k in lq},
        "cpu_ratio": {k: round(lq[k]["cpu_s"] / eq[k]["cpu_s"], 2) for k in lq}}
    empty = _uri(a.pg, tmp, "empty")
    open_store(empty, create=True).close()
    e_wall, e_cpu, e_rss, _ = _timed(_ingest_cmd(empty))
    b_wall, b_cpu, b_rss, _ = _timed(_ingest_cmd(big))
    report["ingest"] = {"empty_s": round(e_wall, 2), "empty_cpu_s": round(e_cpu, 2),
                        "empty_rss_mib": round(e_rss), "big_s": round(b_wall, 2),
                        "big_cpu_s": round(b_cpu, 2), "big_rss_mib": round(b_rss),
                        "ratio": round(b_wall / e_wall, 2), "cpu_ratio": round(b_cpu / e_cpu, 2)}
    sh = writers(_uri(a.pg, tmp, "w"), tmp, a.writers, a.runs)
    em = writers(str(tmp / "w.duckdb"), tmp, a.writers, a.runs)
    report["writers"] = {"n": a.writers, "runs_each": a.runs, "shared": sh, "embedded": em,
                         "throughput_ratio": round(sh["runs_per_s"] / em["runs_per_s"], 2)}
    report["load_after"] = os.getloadavg()
    text = json.dumps(report, indent=1, default=str)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
