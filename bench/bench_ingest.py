"""Ingest speed of instruction-level evidence: argusdb vs raw DuckDB and vs pandas.

The input is the Nsight Compute source page of the H200 softmax kernel
(``argusdb/demo/h200/softmax/softmax.source.csv``, 184 SASS rows, 10,856 evidence values)
replicated as distinct kernels (``softmax_fwd_0``, ``softmax_fwd_1``, ...) until it holds at least
``--rows`` evidence values. Three ways to get the same rows into the ``observed_evidence`` table
of a fresh store, each timed from start to COMMIT:

- **argusdb**: ``ingest_path`` on the CSV (format detection, parsing, wide → long, keys, insert);
- **raw append**: the same evidence rows, already an Arrow table with every column filled in,
  appended with one ``INSERT INTO observed_evidence SELECT * FROM arrow`` (the floor: no parsing);
- **pandas**: ``pandas.read_csv`` per section + ``pandas.concat``, melted to one row per value
  (``melt`` + ``to_numeric``), keys added, inserted from the DataFrame.

Inserting and committing dominate all three, so the parsing parts are also timed alone
(argusdb's reader to Arrow batches vs pandas to the melted DataFrame). Each round runs every
contender once, back to back; a ratio is the median over rounds of the per-round ratio, which
holds up on a shared machine whose load drifts between rounds.

Example:
    python bench/bench_ingest.py --rows 1000000
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from argusdb.collectors import detect  # noqa: E402
from argusdb.ingest import ingest_path  # noqa: E402
from argusdb.store import open_store  # noqa: E402
from argusdb.store.embedded import Store  # noqa: E402
from bench.common import SOURCE, append_rows  # noqa: E402

PER_COPY = 10_856  # evidence values in one copy of the softmax source page


def make_input(rows: int, out: Path) -> int:
    """Write ``ceil(rows / PER_COPY)`` copies of the source page as distinct kernels."""
    lines = SOURCE.read_text().splitlines(keepends=True)
    copies = max(1, -(-rows // PER_COPY))
    with open(out, "w") as fh:
        for i in range(copies):
            for ln in lines:
                fh.write(f'"Function Name","softmax_fwd_{i}"\n'
                         if ln.startswith('"Function Name"') else ln)
    return copies


def fresh_store(tmp: Path, name: str) -> Store:
    p = tmp / f"{name}.duckdb"
    for f in (p, p.with_suffix(".duckdb.wal")):
        f.unlink(missing_ok=True)
    return open_store(p, create=True)


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    t = time.perf_counter()
    n = fn()
    return time.perf_counter() - t, n


def run_argus(tmp: Path, csv: Path) -> tuple[float, int]:
    st = fresh_store(tmp, "argus")
    try:
        return timed(lambda: ingest_path(st, csv).rows["evidence"])
    finally:
        st.close()


def arrow_rows(csv: Path) -> pa.Table:
    """The evidence rows of ``csv`` as the store holds them (every column filled in)."""
    art = detect(csv).read(csv)
    ev = pa.Table.from_batches([b for t, b in art.batches() if t == "evidence"]).combine_chunks()
    n = ev.num_rows
    ev = ev.append_column("evidence_id", pa.array(range(1 << 32, (1 << 32) + n), pa.int64()))
    for col, val in (("program_version", "p"), ("task_id", "t"), ("run_id", "r")):
        ev = ev.append_column(col, pa.repeat(pa.scalar(val), n))
    return ev.append_column("region_id", pa.nulls(n, pa.string()))


def run_raw(tmp: Path, table: pa.Table) -> tuple[float, int]:
    st = fresh_store(tmp, "raw")
    try:
        return timed(lambda: append_rows(st, table))
    finally:
        st.close()


def pandas_rows(csv: Path) -> Any:
    """pandas: ``read_csv`` per section + ``concat``, melted to one row per value."""
    import pandas as pd

    frames = []
    for section in csv.read_text().split('"File Path",')[1:]:
        head, _, body = section.partition("\n")
        kernel_line, _, table = body.partition("\n")
        df = pd.read_csv(io.StringIO(table))
        df = df[df["Address"].astype(str).str.startswith("0x")]
        df = df.assign(kernel=kernel_line.split('","')[1].strip('"'),
                       source_file=head.strip().strip('"').rsplit("/", 1)[-1])
        frames.append(df)
    wide = pd.concat(frames, ignore_index=True)
    metrics = [c for c in wide.columns if c not in (
        "Line No", "Source", "Address", "Source.1", "kernel", "source_file", "# Samples",
        "Address Space", "Access Operation", "Access Size")]
    long = wide.melt(id_vars=["kernel", "Address", "source_file"], value_vars=metrics,
                     var_name="signal", value_name="value")
    long["value"] = pd.to_numeric(long["value"], errors="coerce")
    long = long.dropna(subset=["value"]).reset_index(drop=True)
    long["evidence_id"] = range(1 << 32, (1 << 32) + len(long))
    return long


def run_pandas(tmp: Path, csv: Path) -> tuple[float, int]:
    st = fresh_store(tmp, "pandas")

    def ingest() -> int:
        long = pandas_rows(csv)
        with st.transaction() as con:
            con.register("_df", long)
            con.execute(
                "INSERT INTO observed_evidence (evidence_id, program_version, task_id, run_id, "
                "kernel, launch, cta, sm, warp, warp_role, loop_iter, pc, source_file, signal, "
                "value, src_row) SELECT evidence_id, 'p', 't', 'r', kernel, 'all', 'all', 'all', "
                "'all', 'all', 'all', CAST(('0' || substr(Address, 2)) AS BIGINT), source_file, "
                "signal, value, evidence_id FROM _df")
        return len(long)

    try:
        return timed(ingest)
    finally:
        st.close()


def parse_argus(csv: Path) -> tuple[float, int]:
    """argusdb's reader alone: CSV → Arrow evidence batches (no store)."""
    def parse() -> int:
        art = detect(csv).read(csv)
        return sum(b.num_rows for t, b in art.batches() if t == "evidence")
    return timed(parse)


def parse_pandas(csv: Path) -> tuple[float, int]:
    return timed(lambda: len(pandas_rows(csv)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="evidence values (default 200k)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (default 3)")
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas baselines")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        csv = tmp / "bench.source.csv"
        copies = make_input(args.rows, csv)
        table = arrow_rows(csv)
        runs: dict[str, Callable[[], tuple[float, int]]] = {
            "argusdb ingest": lambda: run_argus(tmp, csv),
            "raw append": lambda: run_raw(tmp, table),
            "pandas ingest": lambda: run_pandas(tmp, csv),
            "argusdb parse": lambda: parse_argus(csv),
            "pandas parse": lambda: parse_pandas(csv),
        }
        if args.no_pandas:
            runs = {k: v for k, v in runs.items() if "pandas" not in k}
        times: dict[str, list[float]] = {k: [] for k in runs}
        counts: dict[str, int] = {}
        for _ in range(args.repeat):  # alternate, so load changes hit every contender alike
            for name, fn in runs.items():
                t, counts[name] = fn()
                times[name].append(t)
        assert len(set(counts.values())) == 1, counts  # the same rows everywhere
        n = counts["argusdb ingest"]
        print(f"input: {copies} kernels, {csv.stat().st_size / 1e6:.1f} MB, {n:,} evidence rows;"
              f" {args.repeat} rounds")
        for k, v in times.items():
            med = statistics.median(v)
            print(f"  {k:<15} median {med:7.3f} s  best {min(v):7.3f} s  "
                  f"({n / med / 1e6:5.2f} M rows/s)")

        def ratio(base: str, ours: str, target: str) -> None:
            # Ratios of runs made back to back, then their median: robust to load drift.
            r = [b / o for b, o in zip(times[base], times[ours], strict=True)]
            print(f"{ours} vs {base}: {statistics.median(r):.2f}x as fast "
                  f"(per-round {min(r):.2f}..{max(r):.2f}; target {target})")

        ratio("raw append", "argusdb ingest", ">= 0.8x")
        if not args.no_pandas:
            ratio("pandas ingest", "argusdb ingest", ">= 5x")
            ratio("pandas parse", "argusdb parse", "none: the parsing inside the two above")

if __name__ == "__main__":
    main()
