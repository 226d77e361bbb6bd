"""Peak memory and time of ingesting an Nsight Systems export against its size.

Replicates the kernel launches of the real export ``tests/data/nsys/perlmutter-cloverleaf-cuda
.sqlite`` (1,312 launches) to each size of ``--mb`` (export megabytes; or ``--kernels``
launches), each copy shifted in time, with its own correlation IDs and runtime calls, in
``--tmp`` (the exports are deleted after use), then, for each size:

- ``argus ingest`` into a new store in a fresh process (``bench/argus_child.py``): the
  process's own peak RSS, wall and CPU time, seconds per GB, and the rows written (2 per
  launch);
- with ``--reader``, the reader alone (every batch built and dropped) in a fresh process: peak
  RSS.

Run: ``python bench/bench_nsys_memory.py [--mb 100 1000] [--reader]`` (1 GB: about 5.6 M
launches).
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

from bench.argus_child import INGEST_HEADER, ingest_cells, ingest_once  # noqa: E402

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


def kernels_for(mb: float, tmp: Path) -> int:
    """Launches that make an export of about ``mb`` megabytes (bytes per launch measured on a
    small replica)."""
    probe = tmp / "probe.sqlite"
    n = make_export(20_000, probe)
    per = (probe.stat().st_size - SOURCE.stat().st_size) / (n - 1312)
    probe.unlink()
    return max(1312, int((mb * 1e6 - SOURCE.stat().st_size) / per))


def read_child(path: Path) -> dict[str, float]:
    """Run in a fresh interpreter: the reader alone over ``path``; peak RSS and wall time."""
    from argusdb.collectors import detect

    t = time.perf_counter()
    art = detect(path).read(path)
    rows = sum(b.num_rows for _, b in art.batches())
    return {"rows": rows, "wall_s": time.perf_counter() - t,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--mb", type=float, nargs="+", help="export sizes, megabytes")
    size.add_argument("--kernels", type=int, nargs="+", help="export sizes, launches")
    ap.add_argument("--reader", action="store_true", help="also the reader alone")
    ap.add_argument("--tmp", default=None, help="folder for the exports and stores")
    ap.add_argument("--child", nargs=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(read_child(Path(args.child[0]))))
        return
    print(f"load {os.getloadavg()[0]:.1f}; source {SOURCE.name}")
    print(f"{'launches':>10} {'export MB':>10} {'make s':>7} {'read peak MiB':>14} "
          f"{INGEST_HEADER}")
    with tempfile.TemporaryDirectory(dir=args.tmp) as d:
        sizes = args.kernels or [kernels_for(mb, Path(d)) for mb in (args.mb or [25, 100])]
        for k in sizes:
            export = Path(d) / f"x{k}.sqlite"
            t0 = time.perf_counter()
            n = make_export(k, export)
            made = time.perf_counter() - t0
            gb = export.stat().st_size / 1e9
            read = "-"
            if args.reader:
                out = subprocess.run([sys.executable, __file__, "--child", str(export)],
                                     capture_output=True, text=True, check=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
                read = f"{json.loads(out.stdout.strip().splitlines()[-1])['peak_mib']:.0f}"
            got = ingest_once(Path(d) / f"s{k}.duckdb", export)
            print(f"{n:>10,} {gb * 1e3:>10.1f} {made:>7.1f} {read:>14} {ingest_cells(got, gb)}",
                  flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
