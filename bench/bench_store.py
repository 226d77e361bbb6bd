"""Ingest throughput of a shared store (DuckLake on PostgreSQL) against the embedded store.

The same recordings go into a fresh embedded store and a fresh shared store, one process each,
one ingest (one transaction, attribution included) per recording, timed from the first ingest to
the last commit. Recording ``k`` is the H200 softmax CUPTI trace with its first kernel record
repeated ``k`` more times (``tests/store/worker.py``). The two contenders alternate per round on
the same machine; the ratio is shared runs/s over embedded runs/s.

Needs a PostgreSQL server: ``.ci/postgres start DIR`` prints a connection string for ``--pg``.

Example:
    python bench/bench_store.py --runs 40 --pg "host=127.0.0.1 port=55432 user=postgres"
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from tests.conftest import KERNELS
from tests.store.worker import recording


def _ingest(store: str, paths: list[Path], program: ProgramSource) -> float:
    with open_store(store, create=True) as st:
        t0 = time.perf_counter()
        for p in paths:
            ingest_path(st, p, program)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="recordings per store and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pg", default="host=127.0.0.1 port=55432 user=postgres dbname=postgres",
                    help="libpq connection string of the PostgreSQL catalog")
    args = ap.parse_args()
    program = ProgramSource.from_path(KERNELS / "softmax.py")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        paths = [recording(k, d) for k in range(1, args.runs + 1)]
        ratios = []
        for r in range(args.rounds):
            emb = _ingest(str(d / f"e{r}.duckdb"), paths, program)
            uri = (f"ducklake:postgres:{args.pg} metadata_schema=bench_{uuid.uuid4().hex[:10]} "
                   f"data_path={d / f'lake{r}'}/")
            sh = _ingest(uri, paths, program)
            ratios.append(emb / sh)
            print(f"round {r}: embedded {args.runs / emb:.2f} runs/s, shared "
                  f"{args.runs / sh:.2f} runs/s, shared/embedded {emb / sh:.2f}x")
        print(f"shared/embedded ingest throughput, median of rounds: "
              f"{sorted(ratios)[len(ratios) // 2]:.2f}x ({args.runs} runs per store)")


if __name__ == "__main__":
    main()
