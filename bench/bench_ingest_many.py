"""Ingest of many small artefacts: ``argus ingest STORE A B C ...`` against two DuckDB peers.

The input is ``--files`` copies of the Nsight Compute source page of the H200 softmax kernel
(``argusdb/demo/h200/softmax/softmax.source.csv``, 10,856 evidence values each), each a distinct
artefact (its kernel renamed ``softmax_fwd_<i>``). Each contender starts from a fresh store and is
timed to its last COMMIT:

- **argusdb**: what ``argus ingest STORE FILES...`` runs (``argusdb/cli/cmd_ingest.py``) once
  the store is open: ``prepare`` (every file detected, read and checked; in worker processes
  where ``argusdb.ingest.pool`` finds many small files and two idle cores) and
  ``ingest_paths`` (parsing, wide -> long, keys, runs and tasks, one transaction, the refresh,
  the appends on the DuckDB threads ``prepare`` chose); and the same with the reading fixed in
  place (``ARGUS_INGEST_WORKERS=0``) and in two worker processes (``=2``, appending on the
  threads ``prepare`` chose, and on one), so that each path is timed whatever the load decides.
  The command's own open of the store and its checker metadata refresh around it are not timed
  (the peers' opens are not either);
- **raw append**: the same evidence rows, already one Arrow table with every column filled in,
  appended with one ``INSERT INTO observed_evidence SELECT * FROM arrow`` (no parsing at all);
- **read_csv SQL**: DuckDB's own pipeline on the same CSV files: ``read_csv`` of every line,
  fields split by a regular expression, sections and source lines carried down with window
  functions, SASS rows unpivoted against their section's header, numbers cast, inserted into
  ``observed_evidence`` (the parse and insert written as SQL, without argusdb's checks).

Each peer runs twice, with DuckDB's default threads (one per core) and with one thread (argusdb
appends its rows with one while it parses beside them, with its workers' cores once they parsed
every row ahead); a ratio is against the faster of the two in the same round. Rounds alternate
the contenders; a ratio is the median over rounds of the per-round ratio. CPU time counts the
process's threads and its worker processes.

Run: ``python bench/bench_ingest_many.py [--files 100] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from argusdb.collectors import detect  # noqa: E402
from argusdb.ingest import ingest_paths, prepare  # noqa: E402
from argusdb.ingest.pool import WORKERS_ENV  # noqa: E402
from argusdb.store import open_store  # noqa: E402
from argusdb.store.embedded import Store  # noqa: E402
from bench.common import append_rows, source_pages  # noqa: E402

#: DuckDB's own pipeline: the files' lines -> fields -> SASS rows x metric columns -> rows.
READ_CSV = r"""
INSERT INTO observed_evidence (evidence_id, program_version, task_id, run_id, kernel, launch,
    cta, sm, warp, warp_role, loop_iter, pc, source_file, source_line, signal, value, unit,
    src_row)
WITH lines AS (
    SELECT filename, row_number() OVER (PARTITION BY filename) AS ln, line
    FROM read_csv($files, columns = {'line': 'VARCHAR'}, delim = '\x01', quote = '',
                  escape = '', header = false, filename = true, auto_detect = false)
),
fields AS (
    SELECT filename, ln, regexp_extract_all(line, '"([^"]*)"', 1) AS f FROM lines
),
marked AS (
    SELECT *,
        max(CASE WHEN f[1] = 'File Path' THEN ln END) OVER w AS sec,
        max(CASE WHEN f[1] = 'Line No' THEN ln END) OVER w AS head_ln,
        max(CASE WHEN f[1] <> '' AND f[1] NOT IN ('File Path', 'Function Name', 'Line No')
                 THEN ln END) OVER w AS src_ln
    FROM fields WINDOW w AS (PARTITION BY filename ORDER BY ln)
),
sass AS (
    SELECT m.filename, m.ln, m.f, h.f AS header, k.f[2] AS kernel, p.f[2] AS path,
           TRY_CAST(s.f[1] AS INTEGER) AS source_line
    FROM marked AS m
    JOIN fields AS h ON h.filename = m.filename AND h.ln = m.head_ln
    JOIN fields AS k ON k.filename = m.filename AND k.ln = m.sec + 1
    JOIN fields AS p ON p.filename = m.filename AND p.ln = m.sec
    LEFT JOIN fields AS s ON s.filename = m.filename AND s.ln = m.src_ln
    WHERE m.f[1] = '' AND starts_with(m.f[3], '0x')
),
cells AS (
    SELECT filename, ln, kernel, path, source_line, f[3] AS addr,
           unnest(header[5:]) AS signal, unnest(f[5:]) AS cell,
           unnest(generate_series(5, len(f))) AS col
    FROM sass
),
files AS (
    SELECT filename, row_number() OVER (ORDER BY filename) AS seq
    FROM (SELECT DISTINCT filename FROM lines)
)
SELECT x.seq * 4294967296 + c.ln * 4096 + c.col, 'p', 't', 'r' || x.seq, c.kernel, 'all', 'all',
       'all', 'all', 'all', 'all',
       ('0x' || c.addr[3:])::UBIGINT::BIGINT - min(('0x' || c.addr[3:])::UBIGINT::BIGINT)
           OVER (PARTITION BY c.filename, c.kernel),
       regexp_extract(c.path, '[^/]+$'), c.source_line, c.signal, TRY_CAST(c.cell AS DOUBLE),
       'count', c.ln * 4096 + c.col
FROM cells AS c JOIN files AS x USING (filename)
WHERE TRY_CAST(c.cell AS DOUBLE) IS NOT NULL
"""


def arrow_rows(files: list[Path]) -> pa.Table:
    """The evidence rows of ``files`` as the store holds them (every column filled in)."""
    tables = []
    for i, f in enumerate(files, 1):
        art = detect(f).read(f)
        ev = pa.Table.from_batches([b for t, b in art.batches() if t == "evidence"])
        n = ev.num_rows
        ev = ev.append_column("evidence_id", pa.array(
            [(i << 32) + r for r in ev.column("src_row").to_pylist()], pa.int64()))
        for col, val in (("program_version", "p"), ("task_id", "t"), ("run_id", f"r{i}")):
            ev = ev.append_column(col, pa.repeat(pa.scalar(val), n))
        tables.append(ev.append_column("region_id", pa.nulls(n, pa.string())))
    return pa.concat_tables(tables).combine_chunks()


def fresh(tmp: Path, name: str, threads: int | None = None) -> Store:
    for f in tmp.glob(f"{name}.duckdb*"):
        f.unlink()
    st = open_store(tmp / f"{name}.duckdb", create=True)
    if threads is not None:
        st.sql(f"SET threads = {threads}")
    return st


def cpu_s() -> float:
    """CPU seconds of every thread of the process (DuckDB's included) and of its finished
    child processes (ingest's workers)."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    """Wall and CPU seconds of ``fn()`` (:func:`cpu_s`), and its row count."""
    t, c = time.perf_counter(), cpu_s()
    n = fn()
    return time.perf_counter() - t, cpu_s() - c, n


#: Worker processes (None: argusdb decides) and DuckDB append threads (None: as ``prepare``
#: chose) each argusdb contender fixes.
ARGUS: dict[str, tuple[str | None, int | None]] = {
    "argusdb ingest": (None, None), "argusdb, read in place": ("0", None),
    "argusdb, 2 workers": ("2", None), "argusdb, 2 workers, 1t": ("2", 1)}
#: What the automatic contender chose in each round: (workers, DuckDB append threads).
CHOSEN: list[tuple[int, int]] = []


def run_argus(tmp: Path, files: list[Path], workers: str | None,
              threads: int | None) -> tuple[float, float, int]:
    """``prepare`` and ``ingest_paths`` as ``argus ingest STORE FILES...`` runs them."""
    st = fresh(tmp, "argus")
    saved = os.environ.pop(WORKERS_ENV, None)
    if workers is not None:
        os.environ[WORKERS_ENV] = workers

    def ingest() -> int:
        prepared = prepare(files)
        if workers is None:
            CHOSEN.append((prepared.workers, prepared.append_threads))
        if threads is not None:
            prepared = dataclasses.replace(prepared, append_threads=threads)
        return sum(r.rows["evidence"] for r in ingest_paths(st, files, prepared=prepared))

    try:
        return timed(ingest)
    finally:
        st.close()
        os.environ.pop(WORKERS_ENV, None)
        if saved is not None:
            os.environ[WORKERS_ENV] = saved


def run_raw(tmp: Path, table: pa.Table, threads: int | None) -> tuple[float, float, int]:
    st = fresh(tmp, "raw", threads)
    try:
        return timed(lambda: append_rows(st, table))
    finally:
        st.close()


def run_read_csv(tmp: Path, files: list[Path], threads: int | None) -> tuple[float, float, int]:
    st = fresh(tmp, "sql", threads)

    def load() -> int:
        with st.transaction() as con:
            con.execute(READ_CSV, {"files": [str(f) for f in files]})
        row = st.sql("SELECT count(*) FROM observed_evidence").fetchone()
        return int(row[0]) if row else 0

    try:
        return timed(load)
    finally:
        st.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100, help="source pages (10,856 values each)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        files = source_pages(args.files, tmp)
        table = arrow_rows(files)
        runs: dict[str, Callable[[], tuple[float, float, int]]] = {
            **{name: (lambda w=w, t=t: run_argus(tmp, files, w, t))
               for name, (w, t) in ARGUS.items()},
            "raw Arrow append": lambda: run_raw(tmp, table, None),
            "raw Arrow append 1t": lambda: run_raw(tmp, table, 1),
            "DuckDB read_csv SQL": lambda: run_read_csv(tmp, files, None),
            "read_csv SQL 1t": lambda: run_read_csv(tmp, files, 1),
        }
        times: dict[str, list[float]] = {k: [] for k in runs}
        cpu: dict[str, list[float]] = {k: [] for k in runs}
        counts: dict[str, int] = {}
        for _ in range(args.rounds):
            for name, fn in runs.items():
                t, c, counts[name] = fn()
                times[name].append(t)
                cpu[name].append(c)
    n = counts["argusdb ingest"]
    print(f"input: {args.files} source pages, {n:,} evidence rows; {args.rounds} rounds; "
          f"load {os.getloadavg()[0]:.1f}; argusdb chose (workers, append threads) {CHOSEN}")
    for k, v in times.items():
        med = statistics.median(v)
        print(f"  {k:<22} median {med:7.3f} s, CPU {statistics.median(cpu[k]):7.3f} s  "
              f"({counts[k]:,} rows, {counts[k] / med / 1e6:5.2f} M rows/s)")
    for name in ARGUS:
        for peer, one, goal in (("raw Arrow append", "raw Arrow append 1t", 0.8),
                                ("DuckDB read_csv SQL", "read_csv SQL 1t", 1.0)):
            r = [min(p, q) / o for p, q, o in zip(times[peer], times[one], times[name],
                                                 strict=True)]
            print(f"{name} vs {peer} (faster thread setting): {statistics.median(r):.2f}x as "
                  f"fast (per round {min(r):.2f}..{max(r):.2f}; goal >= {goal}x)")


if __name__ == "__main__":
    main()
