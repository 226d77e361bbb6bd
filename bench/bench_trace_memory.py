"""Peak memory of ingesting a Kineto trace against its size: bounded by the batch, not the file.

Makes traces of 10x and 100x (``--factors``, or about ``--mb`` megabytes each) the kernel
events of a real Kineto trace (``tests/data/kineto/benchmark_result_493459``; ``--events all``
replicates every event: cpu ops, runtime calls, flows too, which exercises the host-op index
that grows ~56 bytes per runtime call and 32 per cpu op) in ``--tmp`` (deleted after use),
then, for each, in a fresh child process:

- ``read``: the reader alone (scan + all batches, discarded): peak traced Python memory
  (tracemalloc) and peak RSS growth over the process before reading (``--no-read`` skips it);
- ``argus ingest`` into a new store (``bench/argus_child.py``): the process's own peak RSS,
  wall and CPU time, seconds per GB, rows written.

Run: ``python bench/bench_trace_memory.py [--factors 10 100 | --mb 100 1000] [--events
kernels|all] [--batch-rows 10000]``. Prints one table of figures measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.argus_child import INGEST_HEADER, ingest_cells, ingest_once  # noqa: E402
from bench.synth_kineto import SRC, write_replicated_trace  # noqa: E402


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(path: Path, batch_rows: int) -> dict[str, float]:
    """Measure one read in this (fresh) process."""
    from argusdb.collectors.kineto import KinetoTraceReader

    # Warm up: the first Arrow conversion imports pandas (lazily, inside pyarrow), tens of MB
    # of modules that would otherwise count as the reader's memory.
    for _ in KinetoTraceReader().read(SRC).batches():
        pass
    out: dict[str, float] = {}
    base = _rss_mb()
    t0 = time.perf_counter()
    tracemalloc.start()
    art = KinetoTraceReader(batch_rows=batch_rows).read(path)
    out["rows"] = sum(b.num_rows for _, b in art.batches())
    out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["wall_s"] = time.perf_counter() - t0
    # ru_maxrss is the process peak (KiB on Linux); growth over the RSS before the work.
    out["rss_growth_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
    return out


def factor_for(mb: float, only: tuple[str, ...] | None, tmp: Path) -> int:
    """Replicas that make a trace of about ``mb`` megabytes (measured on 10)."""
    probe = tmp / "probe.json"
    per = write_replicated_trace(SRC, probe, 10, only=only)["bytes"] / 10
    probe.unlink()
    return max(1, round(mb * 1e6 / per))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--factors", type=int, nargs="+", help="replicas of the source trace")
    size.add_argument("--mb", type=float, nargs="+", help="trace sizes, megabytes")
    ap.add_argument("--batch-rows", type=int, default=4096)
    ap.add_argument("--events", choices=("kernels", "all"), default="kernels")
    ap.add_argument("--no-read", action="store_true", help="skip the reader-alone child")
    ap.add_argument("--tmp", default=None, help="folder for the traces and stores")
    ap.add_argument("--child", nargs=1, metavar="PATH", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(Path(a.child[0]), a.batch_rows)))
        return
    only = ("kernel",) if a.events == "kernels" else None
    print(f"source: {SRC.name}; events: {a.events}; batch_rows={a.batch_rows}; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'factor':>6} {'file MB':>8} {'kernels':>9} {'read: traced peak MB':>20} "
          f"{'read: RSS growth MB':>19} {INGEST_HEADER}")
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        factors = a.factors or [factor_for(mb, only, Path(tmp)) for mb in (a.mb or [])] \
            or [10, 100]
        for factor in factors:
            path = Path(tmp) / f"x{factor}.json"
            stats = write_replicated_trace(SRC, path, factor, only=only)
            read = {"traced_peak_mb": float("nan"), "rss_growth_mb": float("nan")}
            if not a.no_read:
                read = json.loads(subprocess.run(
                    [sys.executable, __file__, "--child", str(path), "--batch-rows",
                     str(a.batch_rows)], check=True, capture_output=True, text=True).stdout)
            ing = ingest_once(Path(tmp) / f"s{factor}.duckdb", path)
            print(f"{factor:>6} {stats['bytes'] / 2**20:>8.1f} {stats['kernels']:>9,} "
                  f"{read['traced_peak_mb']:>20.2f} {read['rss_growth_mb']:>19.1f} "
                  f"{ingest_cells(ing, stats['bytes'] / 1e9)}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
