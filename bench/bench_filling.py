"""Filling a store: the cost of one more source-page ingest as the store grows.

A store is built from real H200 recordings (the kernel's TTGIR call sites, nvdisasm listing and
Nsight Compute source page), then the source-page run is replicated until the store holds
``--runs`` source-page runs: every replica is a run of its own (own run id, run_seq, evidence
ids, instruction listing), attributed like a real ingest. Then one more real ingest
(``ingest_path`` of a fresh copy of the source page: parse, insert, attribution refresh) is timed
in that store, with the checker's metadata refresh that ``argus ingest`` runs after it, and,
in the same round, in a store holding a single source-page run (the peer).
Rounds alternate the two so load drift hits both alike; the ratio is the median over rounds of
the per-round ratio.

``--kernel softmax`` (default) uses the demo softmax (lines owned by one region each);
``--kernel layernorm`` the layer norm of ``tests/data/attribution``, whose ``tl.sum`` lines are
shared by two regions and split by an independent mapping run (every source page counts
instructions, so every new run is a mapping-run candidate).

Run: ``python bench/bench_filling.py [--runs 200] [--kernel softmax|layernorm] [--rounds 5]``.
Prints the per-ingest times and the ratio ingest at N / ingest at 1 (goal ≤ 1.3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from argusdb import checker, demo, materialize  # noqa: E402
from argusdb.ingest import ingest_path  # noqa: E402
from argusdb.regions import ProgramSource  # noqa: E402
from argusdb.store import Store  # noqa: E402

LN = ROOT / "tests" / "data" / "attribution"
KERNELS = {
    "softmax": (demo.DATA / "kernels" / "softmax.py",
                [demo.DATA / "softmax" / f"softmax.{s}" for s in ("ttgir", "sass")],
                demo.DATA / "softmax" / "softmax.source.csv"),
    "layernorm": (LN / "kernels" / "layernorm.py",
                  [LN / "layernorm.ttgir", LN / "layernorm.sass"],
                  LN / "layernorm.source.csv"),
}


def replicate(store: Store, run_id: str, copies: int) -> None:
    """Copy the run ``run_id`` (its run row, evidence and listing) ``copies`` times, in order,
    50 copies per transaction (bounded memory; each attributed as it lands)."""
    for start in range(0, copies, 50):
        _replicate(store, run_id, start, min(copies, start + 50))


def _replicate(store: Store, run_id: str, lo: int, hi: int) -> None:
    with store.transaction():
        store.sql("CREATE OR REPLACE TEMP TABLE _replica AS SELECT i, "
                  "printf('fill%012d', i) AS run_id, nextval('run_seq_gen') AS run_seq "
                  "FROM range(?, ?) t(i) ORDER BY i", [lo, hi])
        store.sql("INSERT INTO run SELECT r.* REPLACE (x.run_id AS run_id, x.run_seq AS run_seq, "
                  "x.run_id AS artefact_sha256) FROM run r, _replica x WHERE r.run_id = ? "
                  "ORDER BY x.i", [run_id])
        store.sql("INSERT INTO observed_evidence SELECT e.* REPLACE (x.run_seq * 4294967296 "
                  "+ e.src_row AS evidence_id, x.run_id AS run_id) FROM observed_evidence e, "
                  "_replica x WHERE e.run_id = ? ORDER BY x.i, e.src_row", [run_id])
        store.sql("INSERT INTO instruction SELECT i.* REPLACE (x.run_id AS run_id) "
                  "FROM instruction i, _replica x WHERE i.run_id = ? ORDER BY x.i", [run_id])
        materialize.refresh(store)


def build(path: Path, kernel: str, runs: int) -> Store:
    """A store with the kernel's listing runs and ``runs`` source-page runs."""
    prog_path, listings, page = KERNELS[kernel]
    program = ProgramSource.from_path(prog_path)
    st = Store.open(path, create=True)
    for p in [*listings, page]:
        ingest_path(st, p, program, dict(demo.OPTIONS))
    if runs > 1:
        row = st.sql("SELECT run_id FROM run WHERE artefact_name = ?", [page.name]).fetchone()
        assert row is not None
        replicate(st, str(row[0]), runs - 1)
    checker.refresh_metadata(st)  # as 'argus ingest' leaves a store
    return st


def one_more(st: Store, kernel: str, tmp: Path, i: int) -> tuple[float, float]:
    """Time what ``argus ingest`` does with a fresh copy of the source page (a new artefact,
    so a new run): the ingest (parse, insert, attribution refresh), then the checker's
    metadata refresh. Returns both times."""
    prog_path, _, page = KERNELS[kernel]
    copy = tmp / f"more{i}.{page.name}"
    copy.write_text(page.read_text() + "\n" * (i + 1))
    program = ProgramSource.from_path(prog_path)
    t, c = time.perf_counter(), time.process_time()
    r = ingest_path(st, copy, program, dict(demo.OPTIONS))
    t1 = time.perf_counter()
    state = checker.refresh_metadata(st)
    t2, c2 = time.perf_counter(), time.process_time()
    assert not r.already and state in ("incremental", "fresh"), state
    CPU.append(c2 - c)
    return t1 - t, t2 - t1


#: CPU seconds (all threads) of each timed ingest, in call order: the wall time also holds the
#: commit's and checkpoint's fsync waits, which a busy disk stretches.
CPU: list[float] = []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="source-page runs in the big store")
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="softmax")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.perf_counter()
        big = build(tmp / "big.duckdb", args.kernel, args.runs)
        t_build = time.perf_counter() - t0
        small = build(tmp / "small.duckdb", args.kernel, 1)
        rows = big.sql("SELECT count(*) FROM observed_evidence").fetchone()
        small_t, big_t, ratios, meta = [], [], [], []
        for i in range(args.rounds):
            # A fresh one-run store each round, so the peer stays at N = 1.
            small.close()
            for f in tmp.glob("small.duckdb*"):
                f.unlink()
            small = build(tmp / "small.duckdb", args.kernel, 1)
            s = one_more(small, args.kernel, tmp, 2 * i)
            b = one_more(big, args.kernel, tmp, 2 * i + 1)
            small_t.append(sum(s))
            big_t.append(sum(b))
            meta.append((s[1], b[1]))
            ratios.append(sum(b) / sum(s))
        bad = big.sql("SELECT count(*) FILTER (WHERE NOT ok) FROM attribution_conservation"
                      ).fetchone()
        big.close()
        small.close()
    assert rows is not None and bad is not None
    print(f"kernel {args.kernel}: store of {args.runs} source-page runs, {rows[0]:,} evidence "
          f"rows (built in {t_build:.1f} s); load {os.getloadavg()[0]:.1f}")
    print(f"one more ingest at N=1:        median {statistics.median(small_t) * 1e3:7.1f} ms "
          f"({', '.join(f'{x * 1e3:.0f}' for x in small_t)})")
    print(f"one more ingest at N={args.runs:<8}  median {statistics.median(big_t) * 1e3:7.1f} "
          f"ms ({', '.join(f'{x * 1e3:.0f}' for x in big_t)})")
    print(f"  of which the checker's metadata refresh: median "
          f"{statistics.median(m for m, _ in meta) * 1e3:.1f} ms at N=1, "
          f"{statistics.median(m for _, m in meta) * 1e3:.1f} ms at N={args.runs}")
    small_c, big_c = CPU[0::2], CPU[1::2]
    print(f"CPU time: median {statistics.median(small_c) * 1e3:.1f} ms at N=1, "
          f"{statistics.median(big_c) * 1e3:.1f} ms at N={args.runs}: "
          f"{statistics.median(b / s for s, b in zip(small_c, big_c, strict=True)):.2f}x")
    print(f"ratio ingest at N / at 1: {statistics.median(ratios):.2f}x (goal <= 1.3x); "
          f"conservation failures in the big store: {bad[0]}")


if __name__ == "__main__":
    main()
