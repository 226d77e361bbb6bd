"""A store of ~100 M evidence rows: the README's questions, the diff and a region breakdown.

The store is the one of ``bench/bench_diff.py`` (real H200 matmul recordings replicated as runs
of their own and attributed like real ingests) with ``--pages`` source-page runs: 3,830 pages
make ~69 M observed values plus ~31 M attributed region rows. Each question then runs in a
fresh read-only process (``argusdb.connect(..., read_only=True)``, checked as ``argus query``
checks it), timed from the first import to the last row, with its peak RSS; the peer is the
same SQL in DuckDB's own client (unchecked) on the same store, in a fresh process too. Each
process imports what its question needs (``argus query`` does not import the diff's
statistics; the peer imports DuckDB alone):

- ``times``: the README's first question (median launch time per region and version);
- ``breakdown``: the README's region breakdown (instructions and stall samples per region, with
  shares and association entropy);
- ``diff``: ``argus diff`` of ``matmul/matmul_kernel`` between ``config=bk64_s3`` and
  ``config=bn256_s3`` (peer: bench_diff's hand-written SQL of the same medians and spreads).

Run: ``python bench/bench_big.py [--pages 3830] [--keep PATH]`` (the default build writes
4.4 GiB and took 68 min on 2 cores shared at load 7–25; ``--pages 200`` is a quick check).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
kind, path, what = sys.argv[2], sys.argv[3], sys.argv[4]
t0 = time.perf_counter()
if kind == "argus":
    import argusdb
    with argusdb.connect(path, read_only=True) as db:
        if what == "diff":  # imported as 'argus diff' imports it, only for the diff
            from argusdb.answers.diff import diff
            res = diff(db, "matmul/matmul_kernel", "config=bk64_s3", "config=bn256_s3")
            n = len(res.rows)
        else:
            n = db.query(what).num_rows
else:
    import duckdb
    con = duckdb.connect(path, read_only=True)
    if what == "diff":
        from bench.diff_peer import PEER  # DuckDB's client only
        a, b = (con.execute("SELECT program_version FROM program_version WHERE "
                            "options::JSON->>'config' = ?", [c]).fetchone()[0]
                for c in ("bk64_s3", "bn256_s3"))
        n = len(con.execute(PEER, {"region": "matmul/matmul_kernel", "a": a, "b": b}
                            ).fetchall())
    else:
        n = len(con.execute(what).fetchall())
# this process's own peak (VmHWM): ru_maxrss keeps the parent's across fork and exec
hwm = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")]
kib = int(hwm[0]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"s": time.perf_counter() - t0, "rows": n, "rss_mib": kib / 1024}))
"""


def questions() -> dict[str, str]:
    from argusdb.demo import QUESTION, REGION_BREAKDOWN

    return {"times": QUESTION, "breakdown": REGION_BREAKDOWN, "diff": "diff"}


def child(kind: str, path: Path, what: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), kind, str(path), what],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{kind} {what[:40]!r} failed: {out.stderr[-2000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=3830, help="source-page runs (18 k values each)")
    ap.add_argument("--timing", type=int, default=30, help="timing runs per configuration")
    ap.add_argument("--keep", type=Path, help="build (or reuse) the store at this path")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.bench_diff import build

    with tempfile.TemporaryDirectory() as d:
        path = args.keep or Path(d) / "big.duckdb"
        t0 = time.perf_counter()
        n = build(path, args.pages, args.timing) if not path.exists() else None
        t_build = time.perf_counter() - t0
        size = path.stat().st_size / 2**30
        rows = child("duckdb", path, "SELECT (SELECT count(*) FROM observed_evidence) + "
                     "(SELECT count(*) FROM region_attribution) AS n")
        print(f"store: {args.pages} source pages, {size:.1f} GiB"
              + (f", {n:,} evidence values, built in {t_build:.0f} s" if n else "")
              + f"; load {os.getloadavg()[0]:.1f}")
        del rows
        for name, sql in questions().items():
            peer = child("duckdb", path, sql)
            mine = child("argus", path, sql)
            print(f"{name:<10} argusdb {mine['s']:6.2f} s, peak {mine['rss_mib']:7.1f} MiB | "
                  f"DuckDB client {peer['s']:6.2f} s, peak {peer['rss_mib']:7.1f} MiB | "
                  f"{mine['s'] / peer['s']:.1f}x (goal <= 5 s, <= 4 GiB)")


if __name__ == "__main__":
    main()
