"""Figures of the 2-GPU recording (run.sh): ingest every launch, print the README's tables.

    python tools/h200/xlayer/analyse.py tests/data/gpu/xlayer [--store x.duckdb] [--trace t.json]

Each launch folder (xl-<version>-<mode>-<rep>) is one launch group; the two versions of
tp_block.py are two program versions (option version=serial|overlap, target sm_90: the
recording ran on H200s, env.txt). Prints exposed communication per version (observed, from
the timing-clean runs; derived, from the forced variant), the per-collective diff with CIs,
clock-alignment errors, critical ranks, and the collection cost (results.jsonl: the program's
own mean step time under each mode against the program alone).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from argusdb.answers.ranks import collective_diff, critical_ranks, launch_trace
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest.ranks import ingest_launch
from argusdb.store import open_store
from argusdb.store.embedded import Store

PROGRAM = Path(__file__).with_name("tp_block.py")


def build(store: Store, data: Path) -> dict[str, str]:
    prog = ProgramSource.from_path(PROGRAM)
    versions: dict[str, str] = {}
    for d in sorted(p for p in data.iterdir() if p.is_dir() and p.name.startswith("xl-")):
        v = d.name.split("-")[1]
        res = ingest_launch(store, d, program=prog, options={"version": v, "target": "sm_90"})
        versions[v] = res.runs[0].program_version
    return versions


def _rounded(row: dict[str, object]) -> str:
    """A row as one JSON line, its floats to 0.1 (microseconds)."""
    return json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--trace", type=Path, help="write the Perfetto trace of one launch here")
    a = ap.parse_args()
    path = a.store or Path(tempfile.mkdtemp()) / "xlayer.duckdb"
    t0 = time.perf_counter()
    with open_store(path, create=True) as st:
        versions = build(st, a.data)
        print(f"ingest: {time.perf_counter() - t0:.1f} s, versions {versions}")
        print("\n## exposed communication per step (observed, timing-clean runs, steps >= 1)")
        for r in st.rows(
                "SELECT o.options->>'$.version' AS version, count(*) AS n, "
                "median(step_ns)/1e3 AS step_us, median(comm_ns)/1e3 AS comm_us, "
                "median(overlap_ns)/1e3 AS overlap_us, median(exposed_comm_ns)/1e3 AS exposed_us "
                "FROM step_overlap s JOIN program_version o USING (program_version) "
                "WHERE s.timing_clean AND s.step >= 1 GROUP BY ALL ORDER BY 1 DESC"):
            print(_rounded(r))
        print("\n## per launch (median over both ranks' steps >= 1)")
        for r in st.rows(
                "SELECT launch_group, median(step_ns)/1e3 AS step_us, "
                "median(exposed_comm_ns)/1e3 AS exposed_us FROM step_overlap "
                "WHERE timing_clean AND step >= 1 GROUP BY ALL ORDER BY 1"):
            print(_rounded(r))
        print("\n## exposed communication derived from the forced-synchronous variant")
        for r in st.rows(
                "SELECT o.options->>'$.version' AS version, e.rank, round(e.value/1e3, 1) AS us, "
                "e.lineage->>'$.conditions.holds' AS holds FROM evidence e "
                "JOIN program_version o USING (program_version) "
                "WHERE e.signal = 'exposed_communication' ORDER BY 1 DESC, 2, 3"):
            print(json.dumps(r))
        print("\n## diff serial -> overlap (timing-clean runs; ratio = overlap / serial)")
        for r in collective_diff(st, versions["serial"], versions["overlap"]):
            print(f"{r['quantity']:22} {r['key']:10} {r['from_median_ns']/1e3:9.1f} us -> "
                  f"{r['to_median_ns']/1e3:9.1f} us  ratio {r['ratio']:.3f} "
                  f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]  p={r['p_value']:.2g}  "
                  f"{'significant' if r['significant'] else 'not significant'}")
        print("\n## clock alignment (rank 1 against rank 0)")
        for r in st.rows("SELECT launch_group, offset_ns, error_ns, max_residual_ns, n_matched "
                         "FROM clock_alignment WHERE rank = 1 ORDER BY 1"):
            print(json.dumps(r))
        print("\n## critical rank")
        for v, pv in versions.items():
            for r in critical_ranks(st, pv):
                if r["is_critical"]:
                    print(v, r["launch_group"], "rank", r["rank"], "last to arrive in",
                          r["n_last_to_arrive"], "of", r["n_instances"])
        if a.trace:
            a.trace.write_text(json.dumps(launch_trace(st, "xl-overlap-cupti-1")))
            print(f"\nPerfetto trace: {a.trace}")
    results = [json.loads(line) for line in (a.data / "results.jsonl").read_text().splitlines()]
    print("\n## collection cost: program's mean step time per mode / the program alone")
    for v in ("serial", "overlap"):
        base = statistics.median(r["mean_step_ns"] for r in results
                                 if r["version"] == v and r["mode"] == "none")
        for m in ("events", "forced", "cupti", "profiler"):
            xs = [r["mean_step_ns"] for r in results if r["version"] == v and r["mode"] == m]
            if xs:
                print(f"{v:8} {m:9} {statistics.median(xs)/1e3:8.1f} us  "
                      f"x{statistics.median(xs)/base:.3f}  (alone {base/1e3:.1f} us)")


if __name__ == "__main__":
    main()
