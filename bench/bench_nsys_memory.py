"""Peak memory and time of ingesting an Nsight Systems export against its size.

Replicates the kernel launches of the real export ``tests/data/nsys/perlmutter-cloverleaf-cuda
.sqlite`` (1,312 launches) to ``--kernels`` launches (each copy shifted in time, with its own
correlation IDs and runtime calls), then, for each size, in a fresh child process:

- ``read``: the reader alone (every batch built and dropped): peak RSS;
- ``ingest``: ``ingest_path`` into a new store (reader + DuckDB + commit): peak RSS and time.

Run: ``python bench/bench_nsys_memory.py [--kernels 50000 200000]``. ``--kernels 3000000``
makes an export of about 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = ROOT / "tests" / "data" / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"


def make_export(kernels: int, out: Path) -> int:
    """Copy the export and replicate its kernel launches (and their runtime calls)."""
    shutil.copy(SOURCE, out)
    con = sqlite3.connect(out)
    try:
        n0, span, cmax = con.execute("SELECT count(*), max(end) - min(start) + 1000, "
                                     "max(correlationId) + 1 FROM CUPTI_ACTIVITY_KIND_KERNEL"
                                     ).fetchone()
        copies = max(1, -(-kernels // n0)) - 1
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"):
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            shifted = ", ".join(
                f"{c} + i * {span}" if c in ("start", "end") else
                f"{c} + i * {cmax}" if c == "correlationId" else c for c in cols)
            con.execute(f"CREATE TEMP TABLE _{table} AS SELECT * FROM {table}")
            con.execute(f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                        f"WHERE i < {copies}) INSERT INTO {table} ({', '.join(cols)}) "
                        f"SELECT {shifted} FROM _{table}, n")
        con.commit()
        return int(con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
    finally:
        con.close()


def child(mode: str, path: Path, store: Path) -> dict[str, float]:
    """Run in a fresh interpreter: read or ingest ``path``; peak RSS and wall time."""
    from argusdb.collectors import detect
    from argusdb.ingest import ingest_path
    from argusdb.store import Store

    t = time.perf_counter()
    if mode == "read":
        art = detect(path).read(path)
        rows = sum(b.num_rows for _, b in art.batches())
    else:
        with Store.open(store, create=True) as st:
            rows = sum(ingest_path(st, path).rows.values())
    return {"rows": rows, "wall_s": time.perf_counter() - t,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), Path(args.child[2]))))
        return
    base = json.loads(subprocess.run(
        [sys.executable, "-c", "import resource, argusdb.ingest, collectors; print("
         "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout)
    print(f"interpreter with argusdb imported: {base:.0f} MiB; load {os.getloadavg()[0]:.1f}")
    print(f"{'launches':>10} {'export MB':>10} {'read peak MiB':>14} {'ingest peak MiB':>16} "
          f"{'ingest s':>9} {'KB/launch':>10}")
    with tempfile.TemporaryDirectory() as d:
        for k in args.kernels:
            export = Path(d) / f"x{k}.sqlite"
            n = make_export(k, export)
            got = {}
            for mode in ("read", "ingest"):
                store = Path(d) / f"s{k}.duckdb"
                out = subprocess.run([sys.executable, __file__, "--child", mode, str(export),
                                      str(store)], capture_output=True, text=True, check=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
                got[mode] = json.loads(out.stdout.strip().splitlines()[-1])
            grow = (got["ingest"]["peak_mib"] - base) * 1024 / n
            print(f"{n:>10,} {export.stat().st_size / 1e6:>10.1f} "
                  f"{got['read']['peak_mib']:>14.0f} {got['ingest']['peak_mib']:>16.0f} "
                  f"{got['ingest']['wall_s']:>9.1f} {grow:>10.2f}")
            export.unlink()


if __name__ == "__main__":
    main()
