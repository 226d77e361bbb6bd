"""Answers on a big store: ``argus diff``, ``report`` and ``trajectory`` against hand-written SQL.

The store is synthesized from the real H200 matmul recordings of ``tests/data/gpu`` (three
configurations, ``--option config=...``): the clean CUPTI timing runs of each configuration and
the Nsight Compute source page of ``bk64_s3`` are replicated as runs of their own (own run id,
run_seq, evidence ids, instruction listing), attributed like real ingests, until the store holds
``--pages`` source-page runs (18 k evidence values each) and ``--timing`` timing runs per
configuration. Then, read-only and in one process:

- ``argus diff`` of ``matmul/matmul_kernel`` between ``config=bk64_s3`` and ``config=bn256_s3``
  (every signal both have), through the library (``argusdb.answers.diff``);
- the same question in hand-written DuckDB SQL, two peers:
  *SQL medians* (the goal's peer): per sample (run, launch) sums of the region's values of
  both versions, their medians per signal, and the per-run medians of every version of the
  region for the noise floor; no interval, no rank test;
  *SQL + statistics*: the same SQL also returning both sides' samples, then the 95 % interval
  of the ratio of medians (the same exact bootstrap distribution, ``stats.ratio_ci``) and
  scipy's Mann-Whitney U on them: every number the diff prints, without the checker, the
  cohort and standing rules or the coverage checks;
- ``report`` of the region and ``trajectory`` along the three configurations;
- *SQL medians* again, in a DuckDB instance of its own pinned to one thread (the question
  connection's instance runs two threads, which the default peer uses where a core is free).

The diff is timed twice: repeated on one connection (the median of ``--rounds``, as the peers
are; the checker's reports of its questions are kept per store write generation, so a repeat
runs its question without checking it again, from the plan DuckDB kept for it) and as the
first question of a new connection (checks, metadata summary and program versions read
afresh). The repeated diff and *SQL medians* are timed in turn, round by round, after one
untimed call of each, so each round's pair meets the same seconds of the machine's load; the
bench prints the median and range of the per-round ratios beside the ratio of the medians.

Run: ``python bench/bench_diff.py [--pages 100] [--timing 20] [--rounds 3] [--keep PATH]``.
``--pages 1200 --timing 30`` makes the 20 M-row store of the README's figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats as sps  # noqa: E402

import argusdb  # noqa: E402
from argusdb.answers import stats  # noqa: E402
from argusdb.answers.diff import diff  # noqa: E402
from argusdb.answers.report import report  # noqa: E402
from argusdb.answers.trajectory import trajectory  # noqa: E402
from argusdb.api import checked  # noqa: E402
from argusdb.collectors.regions import ProgramSource  # noqa: E402
from argusdb.ingest import ingest_path  # noqa: E402
from argusdb.store import materialize, open_store  # noqa: E402
from argusdb.store.embedded import Store  # noqa: E402
from bench.common import replicate_run  # noqa: E402
from bench.diff_peer import PEER  # noqa: E402

GPU = ROOT / "tests" / "data" / "gpu"
MATMUL = ROOT / "argusdb" / "demo" / "kernels" / "matmul.py"
REGION = "matmul/matmul_kernel"
CONFIGS = ("bk64_s3", "bk32_s1", "bn256_s3")
#: Source-page replicas per transaction while building.
CHUNK = 50


def replicate(store: Store, run_id: str, copies: int, tag: str) -> None:
    """Append ``copies`` runs that copy ``run_id`` (run row, evidence, listing, launches)."""
    replicate_run(store, run_id, 0, copies, f"{tag}%06d", ("instruction", "kernel_launch"))


def build(path: Path, pages: int, timing: int, to_pages: int = 0) -> int:
    """Write the big store; returns its evidence rows (observed + attributed). With
    ``to_pages``, ``bn256_s3`` gets that many source-page runs too (the ``bk64_s3`` page, its
    SASS and listing ingested under ``config=bn256_s3``): the diff then compares every
    source-page signal of the region (55), not duration alone."""
    program = ProgramSource.from_path(MATMUL)
    st = open_store(path, create=True)
    try:
        for c in CONFIGS:
            ingest_path(st, GPU / f"matmul.{c}.run1.cupti.jsonl", program,
                        {"config": c, "target": "sm_90"})
        for c in ("bk64_s3", "bn256_s3")[:2 if to_pages else 1]:
            for suffix in ("sass", "source.csv"):
                ingest_path(st, GPU / f"matmul.bk64_s3.{suffix}", program,
                            {"config": c, "target": "sm_90"})
        st.sql("SET memory_limit = '2GB'")
        runs = dict(st.sql("SELECT artefact_name || coalesce('@' || (SELECT options::JSON->>"
                           "'config' FROM program_version AS v WHERE v.program_version = "
                           "r.program_version), ''), run_id FROM run AS r").fetchall())
        with st.transaction():
            for c in CONFIGS:
                replicate(st, runs[f"matmul.{c}.run1.cupti.jsonl@{c}"], timing - 1, f"t{c}")
            materialize.refresh(st)
        for start in range(1, pages, CHUNK):  # bounded memory; attribution fills linearly
            with st.transaction():
                replicate(st, runs["matmul.bk64_s3.source.csv@bk64_s3"],
                          min(CHUNK, pages - start), f"p{start:05d}_")
                materialize.refresh(st)
        for start in range(1, to_pages, CHUNK):
            with st.transaction():
                replicate(st, runs["matmul.bk64_s3.source.csv@bn256_s3"],
                          min(CHUNK, to_pages - start), f"q{start:05d}_")
                materialize.refresh(st)
        checked.refresh_metadata(st)  # as 'argus ingest' does after writing
        row = st.sql("SELECT (SELECT count(*) FROM observed_evidence) + "
                     "(SELECT sum(n_source_rows) FROM region_attribution)").fetchone()
    finally:
        st.close()
    assert row is not None
    return int(row[0])


#: The same, also returning both sides' samples (in run, launch order) for the interval and
#: the rank test.
PEER_SAMPLES = PEER.replace("count(*) AS n", "count(*) AS n, list(v ORDER BY run_id, launch) "
                            "AS samples").replace(
    "AS ratio,", "AS ratio, a.samples AS from_samples, b.samples AS to_samples,")


def peer_with_statistics(db: argusdb.Connection, params: dict[str, str]) -> list[tuple]:
    """:data:`PEER_SAMPLES`, then the interval and the rank test of each row."""
    out = []
    for sig, m_a, m_b, ratio, xa, xb, spread in db.store.sql(PEER_SAMPLES, params).fetchall():
        x, y = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
        lo, hi = stats.ratio_ci(x, y)
        p = float(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
        out.append((sig, m_a, m_b, ratio, lo, hi, p, spread))
    return out


#: CPU seconds (this process, all threads: DuckDB's too) of each round, by what was timed.
CPU: dict[str, list[float]] = {}


def timed(fn: Callable[[], object], rounds: int, name: str = "") -> tuple[list[float], object]:
    """Wall seconds of ``rounds`` calls and the last answer; CPU seconds go to :data:`CPU`."""
    out: list[float] = []
    last: object = None
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        last = fn()
        out.append(time.perf_counter() - t)
        CPU.setdefault(name, []).append(time.process_time() - c)
    return out, last


def alternating(fns: dict[str, Callable[[], object]], rounds: int
                ) -> dict[str, tuple[list[float], object]]:
    """:func:`timed` of several calls taken in turn, round by round (each round times every
    call once, in order), so that each pair of calls meets the same seconds of a load that
    changes by the second; by name, the wall seconds of each round and the last answer."""
    out: dict[str, tuple[list[float], object]] = {name: ([], None) for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t, last = timed(fn, 1, name)
            out[name] = (out[name][0] + t, last)
    return out


def first_question(path: Path) -> float:
    """Seconds of a diff that is the first question of a new connection (in this process, so
    without the imports and the file's first reads): nothing of the connection's checks,
    metadata summaries or program versions is kept yet."""
    with argusdb.connect(path, read_only=True) as db:
        t = time.perf_counter()
        diff(db, REGION, "config=bk64_s3", "config=bn256_s3")
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=100, help="source-page runs (18 k values each)")
    ap.add_argument("--timing", type=int, default=20, help="timing runs per configuration")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build (or reuse) the store at this path")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = args.keep or Path(d) / "big.duckdb"
        t0 = time.perf_counter()
        if not path.exists():
            build(path, args.pages, args.timing)
        t_build = time.perf_counter() - t0
        with argusdb.connect(path, read_only=True) as db:
            n = db.store.sql("SELECT (SELECT count(*) FROM observed_evidence) + (SELECT "
                             "count(*) FROM region_attribution), (SELECT count(*) FROM run)"
                             ).fetchone()
            a, b = (db.store.sql("SELECT program_version FROM program_version WHERE "
                                 "options::JSON->>'config' = ?", [c]).fetchone()
                    for c in ("bk64_s3", "bn256_s3"))
            assert n is not None and a is not None and b is not None
            params = {"region": REGION, "a": a[0], "b": b[0]}
            diff(db, REGION, "config=bk64_s3", "config=bn256_s3")  # its questions checked,
            db.store.sql(PEER, params).fetchall()  # and the peer's first run, not timed
            both = alternating({
                "diff": lambda: diff(db, REGION, "config=bk64_s3", "config=bn256_s3"),
                "sql": lambda: db.store.sql(PEER, params).fetchall()}, args.rounds)
            (t_diff, res), (t_sql, peer) = both["diff"], both["sql"]
            t_fresh = [first_question(path) for _ in range(args.rounds)]
            t_full, full = timed(lambda: peer_with_statistics(db, params), args.rounds)
            t_rep, _ = timed(lambda: report(db, REGION), args.rounds)
            t_traj, _ = timed(lambda: trajectory(
                db, [REGION], [f"config={c}" for c in CONFIGS]), args.rounds)
        # The goal's peer again, pinned to one DuckDB thread (a database instance of its own:
        # the question connection's settings are locked): on a core left free the default
        # peer's two threads pay off, which the diff's serial Python cannot use.
        with duckdb.connect(str(path), read_only=True, config={"threads": 1}) as con:
            t_sql1, _ = timed(lambda: con.execute(PEER, params).fetchall(), args.rounds,
                              "sql1")
    med = statistics.median
    print(f"store: {n[1]:,} runs, {n[0]:,} evidence rows (observed + region rows); built in "
          f"{t_build:.1f} s; load {os.getloadavg()[0]:.1f}")
    rows = getattr(res, "rows", [])
    print(f"diff rows: {[(r.signal, round(r.ratio, 4), r.significant) for r in rows][:4]}")
    print(f"diff rows: {[f'{r.ratio:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}]' for r in rows][:4]}")
    print(f"peer rows: {[(s, round(x, 4)) for s, _, _, x, _ in peer][:4]}")
    print(f"peer + statistics: {[f'{x:.4f} [{lo:.4f}, {hi:.4f}] p={p:.3g}' for _, _, _, x, lo, hi, p, _ in full][:4]}")  # noqa: E501
    for name, t in (("argus diff", t_diff), ("SQL medians", t_sql),
                    ("SQL + statistics", t_full)):
        print(f"{name:<16} median {med(t):6.3f} s  ({', '.join(f'{x:.2f}' for x in t)})")
    print(f"argus diff, first question of a new connection: median {med(t_fresh):6.3f} s "
          f"({', '.join(f'{x:.2f}' for x in t_fresh)}); ratio to SQL medians "
          f"{med(t_fresh) / med(t_sql):.2f}x")
    print(f"report           median {med(t_rep):6.3f} s")
    print(f"trajectory       median {med(t_traj):6.3f} s")
    print(f"CPU time: argus diff median {med(CPU['diff']) * 1e3:.1f} ms, SQL medians "
          f"{med(CPU['sql']) * 1e3:.1f} ms: {med(CPU['diff']) / med(CPU['sql']):.2f}x")
    print(f"SQL medians on one DuckDB thread: median {med(t_sql1):6.3f} s, CPU "
          f"{med(CPU['sql1']) * 1e3:.1f} ms; diff / it: {med(t_diff) / med(t_sql1):.2f}x wall, "
          f"{med(CPU['diff']) / med(CPU['sql1']):.2f}x CPU")
    pairs = [d / q for d, q in zip(t_diff, t_sql, strict=True)]
    cpu_pairs = [d / q for d, q in zip(CPU["diff"], CPU["sql"], strict=True)]
    print(f"per round (diff and SQL medians taken in turn): wall ratio median "
          f"{med(pairs):.2f}x, range {min(pairs):.2f}-{max(pairs):.2f}x; CPU ratio median "
          f"{med(cpu_pairs):.2f}x, range {min(cpu_pairs):.2f}-{max(cpu_pairs):.2f}x")
    print(f"ratio diff / SQL medians: {med(t_diff) / med(t_sql):.2f}x (goal <= 1.5x; diff goal "
          f"<= 1 s); diff / SQL + statistics: {med(t_diff) / med(t_full):.2f}x; load "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
