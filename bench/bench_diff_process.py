"""``argus diff`` as a whole process against the hand-written SQL as a whole process, at one
signal and at every signal of a source-page region (issue 30).

The store is ``bench/bench_diff.py``'s (the H200 matmul recordings replicated), built with
source pages for both ``config=bk64_s3`` and ``config=bn256_s3`` (``--to-pages``), so that
``matmul/matmul_kernel/mainloop`` has 56 signals on both sides. Each round times, as fresh
processes, CPU seconds (user + system of the child, ``wait4``; CPU rather than wall time, so
that a shared machine's load matters less):

- ``argus diff STORE --region R --from config=bk64_s3 --to config=bn256_s3 --json`` for the
  kernel's ``duration`` (1 signal) and for the mainloop region (every signal);
- the peer: ``python -c`` that imports DuckDB, opens the store read-only and runs
  ``bench/diff_peer.py``'s SQL (per-sample sums, medians per signal, run-to-run spreads) for
  the same region and versions, printing its rows.

The ratio is the median of the per-round ratios (each round runs the pair back to back).
The check of each question is kept from an earlier process (the first, untimed, call), as
``argus diff`` on an unchanged store finds it. Run:
``python bench/bench_diff_process.py [--pages 40] [--timing 10] [--rounds 3] [--keep PATH]
[--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_commands import ARGUS, cpu_of  # noqa: E402

#: The peer process: DuckDB's client, the store read-only, the diff's SQL.
PEER_PROCESS = ("import sys, duckdb; from bench.diff_peer import PEER; "
                "con = duckdb.connect(sys.argv[1], read_only=True); "
                "[print(*r) for r in con.execute(PEER, {'region': sys.argv[2], "
                "'a': sys.argv[3], 'b': sys.argv[4]}).fetchall()]")
CASES = (("1 signal", "matmul/matmul_kernel", ["--signal", "duration"]),
         ("every signal", "matmul/matmul_kernel/mainloop", []))
#: Issue 30's target: whole-process diff at most this many times the SQL process.
TARGET = 1.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=40, help="source-page runs per version")
    ap.add_argument("--timing", type=int, default=10, help="timing runs per configuration")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build (or reuse) the store at this path")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "big.duckdb"
        if not path.exists():
            from bench.bench_diff import build

            build(path, args.pages, args.timing, to_pages=args.pages)
        env = {**os.environ, "PYTHONPATH": str(ROOT),
               "ARGUS_CACHE_DIR": str(Path(tmp) / "kept-checks")}
        import duckdb

        with duckdb.connect(str(path), read_only=True) as con:
            a, b = (con.execute("SELECT program_version FROM program_version WHERE "
                                "options::JSON->>'config' = ?", [c]).fetchone()
                    for c in ("bk64_s3", "bn256_s3"))
            counts = con.execute("SELECT (SELECT count(*) FROM run), "
                                 "(SELECT count(*) FROM observed_evidence)").fetchone()
        assert counts is not None
        runs, rows = int(counts[0]), int(counts[1])
        assert a is not None and b is not None
        results = []
        for name, region, extra in CASES:
            argv = [py, "-c", ARGUS, "diff", str(path), "--region", region, "--from",
                    "config=bk64_s3", "--to", "config=bn256_s3", "--json", *extra]
            out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
            n_signals = len(json.loads(out.stdout)["rows"])
            peer = [py, "-c", PEER_PROCESS, str(path), region, a[0], b[0]]
            cpu_of(peer, env)  # page cache and bytecode warm
            diff_s, peer_s = [], []
            for _ in range(args.rounds):
                diff_s.append(cpu_of(argv, env))
                peer_s.append(cpu_of(peer, env))
            results.append({
                "case": name, "region": region, "signals": n_signals,
                "argus_diff_cpu_s": statistics.median(diff_s),
                "sql_process_cpu_s": statistics.median(peer_s),
                "ratio": statistics.median(d / p for d, p in zip(diff_s, peer_s, strict=True)),
                "target_ratio": TARGET})
    doc = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count(), "rounds": args.rounds,
           "store": {"runs": runs, "observed_rows": rows, "pages_per_version": args.pages},
           "results": results}
    if args.json:
        print(json.dumps(doc, indent=1))
        return
    print(f"store: {runs:,} runs, {rows:,} observed rows; load {doc['load_average']:.1f} on "
          f"{os.cpu_count()} CPUs; median of {args.rounds} rounds (CPU seconds)")
    for r in results:
        print(f"{r['case']:>13} ({r['signals']} signals of {r['region']}): argus diff "
              f"{r['argus_diff_cpu_s']:.3f} s, SQL process {r['sql_process_cpu_s']:.3f} s: "
              f"{r['ratio']:.2f}x (target {TARGET}x)")


if __name__ == "__main__":
    main()
