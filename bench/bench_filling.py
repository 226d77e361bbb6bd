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
instructions, so every new run is a mapping-run candidate); ``--kernel softmax-fw`` the H200
softmax of ``tests/data/gpu`` with its recorded timing run, forced-wait variant run and result
check, so the store holds a forced-wait derivation whose parent is the filled version.

``--sequential N`` fills one store instead with N real ``argus ingest`` commands one after
another (the CLI command run in this process: it opens the store, ingests one fresh copy of
the source page in its transaction with the refreshes, refreshes the checker's metadata and
closes the store), and prints the total wall and CPU time, the cost of the first and the last
10 ingests, the cost per hundred, and the load.

Run: ``python bench/bench_filling.py [--runs 200] [--kernel softmax|layernorm|softmax-fw]
[--rounds 5]`` or ``python bench/bench_filling.py --sequential 1000 [--kernel ...]``.
Prints the per-ingest times and the ratio ingest at N / ingest at 1 (goal ≤ 1.3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from argusdb import demo  # noqa: E402
from argusdb.api import checked  # noqa: E402
from argusdb.cli import main as argus  # noqa: E402
from argusdb.collectors.regions import ProgramSource  # noqa: E402
from argusdb.ingest import ingest_path  # noqa: E402
from argusdb.ingest.variants import VariantOf, record_check  # noqa: E402
from argusdb.store import materialize, open_store  # noqa: E402
from argusdb.store.embedded import Store  # noqa: E402
from bench.common import replicate_run  # noqa: E402


@dataclass(frozen=True)
class Kernel:
    """A program, its listing artefacts, its source page (the run filled) and options; with
    ``probe``, the stem of a recorded forced-wait variant (``tests/data/gpu``) whose parent
    timing run, variant run and result check the store also holds."""

    program: Path
    listings: list[Path]
    page: Path
    options: dict[str, str]
    probe: str | None = None


LN = ROOT / "tests" / "data" / "attribution"
GPU = ROOT / "tests" / "data" / "gpu"
KERNELS = {
    "softmax": Kernel(demo.KERNELS_DIR / "softmax.py",
                      [demo.DATA / "softmax" / f"softmax.{s}" for s in ("ttgir", "sass")],
                      demo.DATA / "softmax" / "softmax.source.csv", demo.OPTIONS),
    "layernorm": Kernel(LN / "kernels" / "layernorm.py",
                        [LN / "layernorm.ttgir", LN / "layernorm.sass"],
                        LN / "layernorm.source.csv", demo.OPTIONS),
    "softmax-fw": Kernel(ROOT / "argusdb" / "demo" / "kernels" / "softmax.py",
                         [GPU / "softmax.default.sass"], GPU / "softmax.default.source.csv",
                         {"config": "default", "target": "sm_90"}, "softmax.default.fw_load"),
}


def replicate(store: Store, run_id: str, copies: int) -> None:
    """Copy the run ``run_id`` (its run row, evidence and listing) ``copies`` times, in order,
    50 copies per transaction (bounded memory; each attributed as it lands)."""
    for start in range(0, copies, 50):
        _replicate(store, run_id, start, min(copies, start + 50))


def _replicate(store: Store, run_id: str, lo: int, hi: int) -> None:
    with store.transaction():
        replicate_run(store, run_id, lo, hi, "fill%012d")
        materialize.refresh(store)


def build(path: Path, kernel: str, runs: int) -> Store:
    """A store with the kernel's listing runs (and forced-wait probe) and ``runs`` source-page
    runs (none when ``runs`` is 0)."""
    k = KERNELS[kernel]
    program = ProgramSource.from_path(k.program)
    st = open_store(path, create=True)
    for p in [*k.listings, *([k.page] if runs else [])]:
        ingest_path(st, p, program, dict(k.options))
    if k.probe:
        _probe(st, k, program)
    if runs > 1:
        row = st.sql("SELECT run_id FROM run WHERE artefact_name = ?", [k.page.name]).fetchone()
        assert row is not None
        replicate(st, str(row[0]), runs - 1)
    checked.refresh_metadata(st)  # as 'argus ingest' leaves a store
    return st


def _probe(st: Store, k: Kernel, program: ProgramSource) -> None:
    """Ingest the probe's parent timing run, its variant run and the variant's result check
    (``tests/data/gpu/probes.json``): the store then derives the probe's exposed latency."""
    assert k.probe is not None
    probe = next(p for p in json.loads((GPU / "probes.json").read_text())
                 ["sequential_cold"]["probes"] if p["stem"] == k.probe)
    parent = ingest_path(st, GPU / f"{probe['kernel']}.{probe['config']}.run1.cupti.jsonl",
                         program, dict(k.options)).program_version
    text = (GPU / "variants" / f"{k.probe}.py").read_text()
    variant = ingest_path(st, GPU / f"{k.probe}.cupti.jsonl", ProgramSource(program.name, text),
                          dict(k.options), VariantOf(parent, probe["transform"])).program_version
    assert record_check(st, variant, parent, probe["rel_err_vs_parent"])
    n = st.sql("SELECT count(*) FROM derived_evidence").fetchone()
    assert n is not None and n[0] == 1, "the probe derives one exposed latency"


def page_copy(kernel: str, tmp: Path, i: int) -> Path:
    """A fresh copy of the kernel's source page (a new artefact, hence a new run)."""
    page = KERNELS[kernel].page
    copy = tmp / f"more{i}.{page.name}"
    copy.write_text(page.read_text() + "\n" * (i + 1))
    return copy


def one_more(st: Store, kernel: str, tmp: Path, i: int) -> tuple[float, float]:
    """Time what ``argus ingest`` does with a fresh copy of the source page (a new artefact,
    so a new run): the ingest (parse, insert, attribution refresh), then the checker's
    metadata refresh. Returns both times."""
    k = KERNELS[kernel]
    copy = page_copy(kernel, tmp, i)
    program = ProgramSource.from_path(k.program)
    t, c = time.perf_counter(), time.process_time()
    r = ingest_path(st, copy, program, dict(k.options))
    t1 = time.perf_counter()
    state = checked.refresh_metadata(st)
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
    ap.add_argument("--sequential", type=int, metavar="N",
                    help="fill one store with N 'argus ingest' commands one after another")
    args = ap.parse_args()
    if args.sequential:
        sequential(args.kernel, args.sequential)
        return
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


def sequential(kernel: str, n: int) -> None:
    """Fill a store with ``n`` ``argus ingest`` commands, one after another, each of one fresh
    copy of the source page; print the totals, the first and last 10 ingests and per hundred."""
    k = KERNELS[kernel]
    cli = CliRunner()
    opts = [a for key, v in k.options.items() for a in ("--option", f"{key}={v}")]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = tmp / "seq.duckdb"
        build(path, kernel, 0).close()  # the listings (and probe): the source pages come next
        load0 = os.getloadavg()
        print(f"kernel {kernel}: {n} 'argus ingest' commands into one store; "
              f"load {load0[0]:.1f}", flush=True)
        walls: list[float] = []
        cpus: list[float] = []
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(n):
            copy = page_copy(kernel, tmp, i)
            t, c = time.perf_counter(), time.process_time()
            res = cli.invoke(argus, ["-q", "ingest", str(path), str(copy), "--program",
                                     str(k.program), *opts])
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            assert res.exit_code == 0, res.output
            copy.unlink()
            if (i + 1) % 100 == 0:
                w, c = statistics.median(walls[-100:]), statistics.median(cpus[-100:])
                print(f"  ingests {i - 98:>4}-{i + 1:<4}: median {w * 1e3:6.0f} ms wall, "
                      f"{c * 1e3:5.0f} ms CPU; load {os.getloadavg()[0]:.1f}", flush=True)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        with open_store(path, read_only=True) as st:
            row = st.sql("SELECT count(*), (SELECT count(*) FROM observed_evidence), "
                         "(SELECT count(*) FROM derived_evidence) FROM run").fetchone()
        size = sum(f.stat().st_size for f in tmp.glob("seq.duckdb*"))
    assert row is not None
    m = min(10, n)
    first = (statistics.median(walls[:m]), statistics.median(cpus[:m]))
    last = (statistics.median(walls[-m:]), statistics.median(cpus[-m:]))
    print(f"total {wall:.1f} s wall ({wall / 60:.1f} min; goal <= 15 min), {cpu:.1f} s CPU; "
          f"store: {row[0]} runs, {row[1]:,} evidence rows, {row[2]} derived rows, "
          f"{size / 2**20:.0f} MiB")
    print(f"first {m} ingests: median {first[0] * 1e3:.0f} ms wall, {first[1] * 1e3:.0f} ms CPU; "
          f"last {m}: {last[0] * 1e3:.0f} ms wall, {last[1] * 1e3:.0f} ms CPU "
          f"({last[0] / first[0]:.2f}x wall, {last[1] / first[1]:.2f}x CPU)")
    print(f"load at start {load0[0]:.1f}, at end {os.getloadavg()[0]:.1f} "
          f"(1-min averages)")


if __name__ == "__main__":
    main()
