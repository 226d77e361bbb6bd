"""Check overhead of the checked query language on a large store.

Builds a store from the shipped H200 CUPTI recordings (softmax under two program versions,
matmul), replicates its real evidence rows in SQL until it holds ``--rows`` rows (launch
indices shifted so rows stay distinct; benchmark only), then times typical questions:
``check`` alone (parse, rules, metadata queries against the per-connection summary) and end
to end (check + run on the locked-down connection). Prints medians and the ratio.

    python bench/bench_checker.py                 # quick: 1 M rows
    python bench/bench_checker.py --rows 10000000 # the README figures

Targets: check median <= 2 ms per typical query and <= 5 % of end-to-end time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from argusdb import demo
from argusdb.api import checked
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.schema.sqltext import literal
from argusdb.store import open_store


def build(path: Path, rows: int, runs: int = 0) -> dict[str, str]:
    with open_store(path, create=True) as st:
        sm = ProgramSource.from_path(demo.KERNELS_DIR / "softmax.py")
        mm = ProgramSource.from_path(demo.KERNELS_DIR / "matmul.py")
        r1 = ingest_path(st, demo.DATA / "softmax" / "softmax.cupti.jsonl", sm,
                         dict(demo.OPTIONS))
        v1 = r1.program_version
        v2 = ingest_path(st, demo.DATA / "softmax" / "softmax.cupti.jsonl", sm,
                         {**demo.OPTIONS, "num_warps": "8"}).program_version
        ingest_path(st, demo.DATA / "matmul" / "matmul.cupti.jsonl", mm, dict(demo.OPTIONS))
        (real,) = st.sql("SELECT count(*) FROM observed_evidence").fetchone() or (0,)
        copies = max(1, -(-rows // real))
        st.sql(f"""
            INSERT INTO observed_evidence BY NAME
            SELECT e.* REPLACE (
                e.evidence_id + t.k * (1::BIGINT << 40) AS evidence_id,
                CASE WHEN e.launch = 'all' THEN 'all'
                     ELSE (t.k * 100000 + e.launch::BIGINT)::VARCHAR END AS launch)
            FROM observed_evidence AS e CROSS JOIN range(1, {copies}) AS t(k)""")
        if runs > 1:
            # more runs of the first version: its run, copied (benchmark only)
            st.sql(f"""
                INSERT INTO run BY NAME SELECT r.* REPLACE (
                    r.run_id || '-copy' || t.k AS run_id,
                    nextval('run_seq_gen') AS run_seq,
                    r.artefact_sha256 || t.k AS artefact_sha256)
                FROM run AS r CROSS JOIN range(1, {runs}) AS t(k)
                WHERE r.run_id = {literal(r1.run_id)}""")
            st.sql(f"""
                INSERT INTO observed_evidence BY NAME SELECT e.* REPLACE (
                    e.run_id || '-copy' || t.k AS run_id,
                    -(e.evidence_id + t.k * (1::BIGINT << 40)) AS evidence_id)
                FROM observed_evidence AS e CROSS JOIN range(1, {runs}) AS t(k)
                WHERE e.run_id = {literal(r1.run_id)} AND e.evidence_id < (1::BIGINT << 40)""")
    return {"V1": v1, "V2": v2}


QUERIES = {
    "demo question (per region, per version)": demo.QUESTION,
    "median of one region": "SELECT median(value) AS med FROM evidence "
                            "WHERE region_id = 'matmul/matmul_kernel' AND signal = 'duration'",
    "clean runs via run table": "SELECT e.region_id, r.signature, quantile_cont(e.value, 0.9) "
                                "FROM evidence e JOIN run r USING (run_id) WHERE r.timing_clean"
                                " AND e.signal = 'duration' GROUP BY e.region_id, "
                                "e.program_version, r.signature",
    "version_diff": "SELECT region_id, from_median, to_median, ratio "
                    "FROM version_diff('duration', '{V1}', '{V2}')",
    "CTE grouped by version": "WITH per AS (SELECT program_version, run_id, kernel, "
                              "max(value) AS worst FROM evidence GROUP BY ALL) "
                              "SELECT program_version, kernel, avg(worst) FROM per "
                              "GROUP BY program_version, kernel",
    # its partitions checked against the rows of evidence the CTE reads, per region_id
    "window over a CTE, per region": "WITH per AS (SELECT region_id, run_id, median(value) AS "
                                     "med FROM evidence WHERE signal = 'duration' AND region_id"
                                     " IS NOT NULL AND program_version NOT IN ('{V2}', '{V3}') "
                                     "GROUP BY ALL) "
                                     "SELECT region_id, run_id, med / max(med) OVER (PARTITION "
                                     "BY region_id) AS share FROM per",
}


def median_ms(fn: object, repeat: int, clock: object = time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        t0 = clock()  # type: ignore[operator]
        fn()  # type: ignore[operator]
        times.append((clock() - t0) * 1000)  # type: ignore[operator]
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="evidence rows (default 1 M)")
    ap.add_argument("--runs", type=int, default=0,
                    help="copies of softmax's run (to time the metadata refresh at N runs)")
    ap.add_argument("--repeat", type=int, default=31, help="timed checks per query")
    ap.add_argument("--repeat-e2e", type=int, default=5, help="timed end-to-end runs per query")
    ap.add_argument("--warmup", type=int, default=10, help="untimed checks per query first")
    args = ap.parse_args()
    print(f"command: python bench/bench_checker.py --rows {args.rows} --runs {args.runs}; host: "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        t0 = time.perf_counter()
        ids = build(path, args.rows, args.runs)
        build_s = time.perf_counter() - t0
        with open_store(path) as st:  # what 'argus ingest' does after ingesting
            t0 = time.perf_counter()
            checked.refresh_metadata(st)
            refresh_s = time.perf_counter() - t0
            # one more run arrives: only its rows are summarised again
            sm = ProgramSource.from_path(demo.KERNELS_DIR / "softmax.py")
            new = ingest_path(st, demo.DATA / "softmax" / "softmax.cupti.jsonl", sm,
                              {**demo.OPTIONS, "num_warps": "16"})
            t0 = time.perf_counter()
            how = checked.refresh_metadata(st, [new.run_id])
            ids["V3"] = new.program_version
            incr_s = time.perf_counter() - t0
            assert how == "incremental", how
        with open_store(path, read_only=True) as st:
            (n,) = st.sql("SELECT count(*) FROM evidence").fetchone() or (0,)
            (n_runs,) = st.sql("SELECT count(*) FROM run").fetchone() or (0,)
            t0 = time.perf_counter()
            assert checked.check(QUERIES["median of one region"], st) == []
            first_ms = (time.perf_counter() - t0) * 1000
            print(f"store: {n:,} evidence rows, {n_runs} runs (built in {build_s:.0f} s); "
                  f"metadata summary "
                  f"full build: {refresh_s:.2f} s; incremental refresh after one more "
                  f"ingest: {incr_s * 1000:.0f} ms ({incr_s / refresh_s:.1%} of the full "
                  f"build); first check of a new read-only connection: {first_ms:.1f} ms")
            print(f"{'query':42} {'check ms':>9} {'(cpu ms)':>9} {'end-to-end ms':>14} "
                  f"{'check %':>8}")
            worst_ms, worst_pct = 0.0, 0.0
            for name, q in QUERIES.items():
                sql = q.format(**ids)
                found = checked.check(sql, st)
                assert found == [], (name, [str(f) for f in found])
                for _ in range(args.warmup):  # let the engine's threads settle after setup
                    checked.check(sql, st)
                c = median_ms(lambda s=sql: checked.check(s, st), args.repeat)
                cpu = median_ms(lambda s=sql: checked.check(s, st), args.repeat,
                                time.process_time)
                e = median_ms(lambda s=sql: checked.execute(s, st), args.repeat_e2e)
                pct = 100 * c / e
                worst_ms, worst_pct = max(worst_ms, c), max(worst_pct, pct)
                print(f"{name:42} {c:9.2f} {cpu:9.2f} {e:14.1f} {pct:7.2f}%")
        ok = worst_ms <= 2.0 and worst_pct <= 5.0
        print(f"worst check median {worst_ms:.2f} ms (target <= 2), worst share "
              f"{worst_pct:.2f}% of end-to-end (target <= 5): {'PASS' if ok else 'FAIL'}; "
              f"load average now {os.getloadavg()[0]:.1f}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
