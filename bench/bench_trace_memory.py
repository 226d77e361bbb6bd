"""Peak memory of ingesting a Kineto trace against its size: bounded by the batch, not the file.

Makes traces of 10x and 100x (``--factors``) the kernel events of a real Kineto trace
(``tests/data/kineto/benchmark_result_493459``; ``--events all`` replicates every event: cpu
ops, runtime calls, flows too, which exercises the host-op index that grows ~32 bytes per cpu op
and runtime call), then, for each, in a fresh child process:

- ``read``: the reader alone (scan + all batches, discarded): peak traced Python memory
  (tracemalloc) and peak RSS growth over the process before reading;
- ``ingest``: ``ingest_path`` into a new store (reader + DuckDB): peak RSS growth.

Run: ``python bench/bench_trace_memory.py [--factors 10 100] [--events kernels|all]
[--batch-rows 10000]``.
Prints one table of figures measured in this run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.synth_kineto import SRC, write_replicated_trace  # noqa: E402


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(mode: str, path: Path, batch_rows: int) -> dict[str, float]:
    """Measure one read or ingest in this (fresh) process."""
    from argusdb.collectors.kineto import KinetoTraceReader
    from argusdb.ingest import ingest_path
    from argusdb.store import Store

    # Warm up: the first Arrow conversion imports pandas (lazily, inside pyarrow), tens of MB
    # of modules that would otherwise count as the reader's memory.
    for _ in KinetoTraceReader().read(SRC).batches():
        pass
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        st = Store.open(Path(tmp) / "b.duckdb", create=True) if mode == "ingest" else None
        base = _rss_mb()
        t0 = time.perf_counter()
        if mode == "read":
            tracemalloc.start()
            art = KinetoTraceReader(batch_rows=batch_rows).read(path)
            rows = sum(b.num_rows for _, b in art.batches())
            out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        else:
            import argusdb.collectors.kineto.trace as kt
            kt.BATCH_ROWS = batch_rows
            assert st is not None
            res = ingest_path(st, path)
            rows = sum(res.rows.values())
            st.close()
        out["wall_s"] = time.perf_counter() - t0
        # ru_maxrss is the process peak (KiB on Linux); growth over the RSS before the work.
        out["rss_growth_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
        out["rows"] = rows
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--factors", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--batch-rows", type=int, default=4096)
    ap.add_argument("--events", choices=("kernels", "all"), default="kernels")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], Path(a.child[1]), a.batch_rows)))
        return
    print(f"source: {SRC.name}; events: {a.events}; batch_rows={a.batch_rows}")
    print(f"{'factor':>6} {'file MB':>8} {'kernels':>8} {'read: traced peak MB':>20} "
          f"{'read: RSS growth MB':>19} {'ingest: RSS growth MB':>21} {'ingest s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for factor in a.factors:
            path = Path(tmp) / f"x{factor}.json"
            stats = write_replicated_trace(SRC, path, factor,
                                           only=("kernel",) if a.events == "kernels" else None)
            res = {mode: json.loads(subprocess.run(
                [sys.executable, __file__, "--child", mode, str(path), "--batch-rows",
                 str(a.batch_rows)], check=True, capture_output=True, text=True).stdout)
                for mode in ("read", "ingest")}
            print(f"{factor:>6} {stats['bytes'] / 2**20:>8.1f} {stats['kernels']:>8} "
                  f"{res['read']['traced_peak_mb']:>20.2f} {res['read']['rss_growth_mb']:>19.1f} "
                  f"{res['ingest']['rss_growth_mb']:>21.1f} {res['ingest']['wall_s']:>8.2f}")
            path.unlink()


if __name__ == "__main__":
    main()
