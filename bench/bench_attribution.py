"""Attribution speed: instruction-level evidence of N kernel runs mapped onto regions.

Builds a store from the real H200 recordings of the demo (softmax and matmul: TTGIR call sites,
nvdisasm listing, Nsight Compute source page), then replicates each source-page run into
``--runs`` runs in total (half per kernel; every replica is its own run with its own run_seq and
evidence ids, so every replica is attributed on its own, with the newest other replica as its
mapping run). Then, on the same rows:

- ``attribution``: a full rebuild of ``attribution_split`` and ``region_attribution``
  (``argusdb.store.materialize.refresh``: PC -> line -> call sites -> region, shares, entropies,
  the per-region sums of every row with their lineage lists) for every version;
- ``plain``: a plain DuckDB aggregation of the same rows into a table
  (``GROUP BY run_id, kernel, source_file, source_line, signal``: what a line-level report
  costs without regions, call sites, shares or lineage).

Run: ``python bench/bench_attribution.py [--runs 1000] [--threads N]``. Prints the figures
measured in this run and the ratio attribution / plain.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from argusdb import demo  # noqa: E402
from argusdb.collectors.regions import ProgramSource  # noqa: E402
from argusdb.ingest import ingest_path  # noqa: E402
from argusdb.store import materialize, open_store  # noqa: E402
from argusdb.store.embedded import Store  # noqa: E402


def build(store: Store, runs: int) -> int:
    """Ingest the demo recordings, replicate the source-page runs; returns source rows."""
    for k in demo.KERNELS:
        program = ProgramSource.from_path(demo.KERNELS_DIR / f"{k}.py")
        for suffix in ("ttgir", "sass", "source.csv"):
            ingest_path(store, demo.DATA / k / f"{k}.{suffix}", program, dict(demo.OPTIONS))
    originals = [r[0] for r in store.sql("SELECT run_id FROM run WHERE kind = "
                                         "'ncu.source_csv' ORDER BY run_seq").fetchall()]
    extra = runs - len(originals)
    with store.transaction():
        # Replica i copies original i % 2 under run id bench<i> with the next run_seq of the
        # store's sequence; set-based, so building the bench store costs seconds, not minutes.
        store.sql("CREATE TEMP TABLE _replica AS SELECT i, ? [i % ? + 1] AS src, "
                  "printf('bench%012d', i) AS run_id, nextval('run_seq_gen') AS run_seq "
                  "FROM range(?) t(i)", [originals, len(originals), extra])
        store.sql("INSERT INTO run SELECT r.* REPLACE (x.run_id AS run_id, x.run_seq AS "
                  "run_seq, x.run_id AS artefact_sha256) FROM run r JOIN _replica x "
                  "ON r.run_id = x.src")
        store.sql("INSERT INTO observed_evidence SELECT e.* REPLACE (x.run_seq * 4294967296 "
                  "+ e.src_row AS evidence_id, x.run_id AS run_id) FROM observed_evidence e "
                  "JOIN _replica x ON e.run_id = x.src")
    row = store.sql("SELECT count(*) FROM attribution_source").fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000, help="kernel runs in total (default 1000)")
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: DuckDB default)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        st = open_store(Path(tmp) / "bench.duckdb", create=True)
        if args.threads:
            st.sql(f"SET threads = {int(args.threads)}")
        t0 = time.perf_counter()
        rows = build(st, args.runs)
        t_build = time.perf_counter() - t0

        t0 = time.perf_counter()
        st.sql("CREATE TABLE _bench_plain AS SELECT run_id, kernel, source_file, source_line, "
               "signal, sum(value) AS value FROM attribution_source GROUP BY ALL")
        t_plain = time.perf_counter() - t0

        st.sql("DELETE FROM materialization")  # force a full rebuild of every version
        t0 = time.perf_counter()
        with st.transaction():
            report = materialize.refresh(st)
        t_attr = time.perf_counter() - t0

        bad = st.sql("SELECT count(*) FILTER (WHERE NOT ok), count(*) "
                     "FROM attribution_conservation").fetchone()
        threads = st.sql("SELECT current_setting('threads')").fetchone()
        st.close()
    assert bad is not None and threads is not None
    print(f"kernel runs: {args.runs} (replicated from the H200 softmax and matmul source pages)")
    print(f"attributable source rows: {rows:,} (build {t_build:.1f} s, DuckDB threads "
          f"{threads[0]})")
    print(f"attribution (splits + region rows with lineage): {t_attr:.2f} s, "
          f"{rows / t_attr:,.0f} rows/s, {report.attribution_rows:,} rows attributed")
    print(f"plain DuckDB aggregation (GROUP BY run, kernel, line, signal): {t_plain:.2f} s, "
          f"{rows / t_plain:,.0f} rows/s")
    print(f"ratio attribution / plain: {t_attr / t_plain:.1f}x")
    print(f"conservation: {bad[1] - bad[0]} of {bad[1]} (run, kernel, signal) totals exact")


if __name__ == "__main__":
    main()
