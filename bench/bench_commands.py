"""Whole commands, each a fresh process, against their peers and targets (issue 30).

Builds the demo store (``argus demo``, the shipped H200 recordings) in a temporary folder and
times, in rounds that alternate the contenders, each command's CPU seconds (user + system of
the child, from ``wait4``; CPU rather than wall time, so that a shared machine's load matters
less):

- ``argus query STORE SQL`` of the README's first question, its check kept from an earlier
  process (``argusdb.api.kept``; the first process of the bench asks it once), against the
  DuckDB one-liner ``python -c "import duckdb; connect read-only; same SQL; print"``; and
  with the cache off (``ARGUS_CACHE_DIR=off``: every process parses and checks again);
- ``argus report`` (softmax, every signal), ``argus trajectory`` and ``argus diff`` (the
  matmul's two configurations timed on the H200, ``tests/data/gpu/matmul.*.run1``, ingested
  beside the demo; duration) and ``argus export`` (a Perfetto trace of one run), against the
  issue's 0.5 s CPU target;
- MCP ``initialize``: ``argus mcp STORE`` started, one ``initialize`` request on its stdin,
  the wall seconds to its answer (target 1 s at idle);
- ingest of 10 small artefacts (copies of the softmax Nsight Compute source page, kernels
  renamed) file by file, 10 ``argus ingest`` processes, against one ``argus ingest`` of the
  10 (target 1.5x); ``--ingest-rounds`` of these (each round ingests 20 times).

Each line prints the median over rounds and the range, the ratio to the peer (the median of
the per-round ratios) or to the target, and the load average. ``--json`` prints one document.
Bytecode is written once before timing (an installed wheel has it). Run:
``python bench/bench_commands.py [--rounds 5] [--ingest-rounds 1] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import source_pages  # noqa: E402

#: Two configurations of the H200 matmul, timed there (what the README's diff compares).
MATMUL = ROOT / "argusdb" / "demo" / "kernels" / "matmul.py"
CONFIGS = ("bk64_s3", "bk32_s1")

ARGUS = ("import sys; from argusdb.cli import main; sys.argv[0] = 'argus'; "
         "sys.exit(main())")
PEER = ("import sys, duckdb; con = duckdb.connect(sys.argv[1], read_only=True); "
        "[print(*r) for r in con.execute(sys.argv[2]).fetchall()]")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}}
#: Targets of issue 30 (CPU seconds, wall seconds for MCP, ratios).
TARGETS = {"argus query": 0.3, "command": 0.5, "mcp initialize": 1.0, "ingest": 1.5,
           "query ratio": 1.7}


def cpu_of(argv: list[str], env: dict[str, str], stdin: bytes | None = None) -> float:
    """CPU seconds of one child process (its output discarded; a failure ends the bench)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{argv[2:]} failed: {err.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def mcp_initialize(py: str, store: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds from starting ``argus mcp`` to its answer to ``initialize``, and the CPU
    seconds of the process by then and its end (stdin closed after the answer)."""
    start = time.monotonic()
    proc = subprocess.Popen([py, "-c", ARGUS, "mcp", store], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    wall = time.monotonic() - start
    if b'"result"' not in line:
        raise SystemExit(f"argus mcp did not answer initialize: {line[:500]!r}")
    proc.stdin.close()
    _, _, usage = os.wait4(proc.pid, 0)
    return wall, usage.ru_utime + usage.ru_stime


def first_column(py: str, store: str, sql: str, env: dict[str, str]) -> list[str]:
    out = subprocess.run([py, "-c", ARGUS, "query", store, sql, "--csv"], env=env,
                         check=True, capture_output=True, text=True).stdout
    return [ln.split(",")[0] for ln in out.splitlines()[1:] if ln]


def spread(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ingest-rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT),
               "ARGUS_CACHE_DIR": str(Path(tmp) / "kept-checks")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        store = str(Path(tmp) / "demo.duckdb")
        subprocess.run([py, "-c", ARGUS, "demo", store], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for config in CONFIGS:
            subprocess.run([py, "-c", ARGUS, "-q", "ingest", store,
                            str(ROOT / "tests" / "data" / "gpu" / f"matmul.{config}.run1.cupti"
                                f".jsonl"), "--program", str(MATMUL), "--option",
                            f"config={config}", "--option", "target=sm_90"], env=env,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sys.path.insert(0, str(ROOT))
        from argusdb.demo import QUESTION

        versions = [f"config={c}" for c in CONFIGS]
        run = first_column(py, store, "SELECT run_id FROM run WHERE artefact_name = "
                           "'softmax.cupti.jsonl' ORDER BY run_seq LIMIT 1", env)[0]
        off = {**env, "ARGUS_CACHE_DIR": "off"}
        region = "softmax/softmax_fwd"
        cases: dict[str, tuple[list[str], dict[str, str]]] = {
            "argus query": ([py, "-c", ARGUS, "query", store, QUESTION], env),
            "duckdb one-liner": ([py, "-c", PEER, store, QUESTION], env),
            "argus query, no kept check": ([py, "-c", ARGUS, "query", store, QUESTION], off),
            "argus report": ([py, "-c", ARGUS, "report", store, "--region", region], env),
            "argus trajectory": ([py, "-c", ARGUS, "trajectory", store, "--region",
                                  "matmul/matmul_kernel", "--versions", ",".join(versions),
                                  "--signal", "duration"], env),
            "argus diff": ([py, "-c", ARGUS, "diff", store, "--region", "matmul/matmul_kernel",
                            "--from", versions[0], "--to", versions[1], "--signal",
                            "duration"], env),
            "argus export": ([py, "-c", ARGUS, "export", store, str(Path(tmp) / "t.json"),
                              "--format", "perfetto", "--run", run], env),
        }
        for argv, e in cases.values():  # bytecode, page cache and the kept check warm
            cpu_of(argv, e)
        cpu: dict[str, list[float]] = {k: [] for k in cases}
        mcp_wall: list[float] = []
        mcp_cpu: list[float] = []
        for _ in range(args.rounds):
            for name, (argv, e) in cases.items():
                cpu[name].append(cpu_of(argv, e))
            wall, c = mcp_initialize(py, store, env)
            mcp_wall.append(wall)
            mcp_cpu.append(c)
        ingest_one: list[float] = []
        ingest_each: list[float] = []
        files = [str(p) for p in source_pages(10, Path(tmp))]
        for i in range(args.ingest_rounds):
            one, each = str(Path(tmp) / f"one{i}.duckdb"), str(Path(tmp) / f"each{i}.duckdb")
            for s in (one, each):
                subprocess.run([py, "-c", ARGUS, "init", s], env=env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ingest_one.append(cpu_of([py, "-c", ARGUS, "-q", "ingest", one, *files], env))
            ingest_each.append(sum(cpu_of([py, "-c", ARGUS, "-q", "ingest", each, f], env)
                                   for f in files))
    load = os.getloadavg()[0]
    peer = cpu["duckdb one-liner"]
    rows: list[dict[str, object]] = []
    for name, xs in cpu.items():
        row: dict[str, object] = {"command": name, "cpu_s": spread(xs)}
        if name.startswith("argus query"):
            row["ratio"] = statistics.median(a / b for a, b in zip(xs, peer, strict=True))
            row["peer"] = "duckdb one-liner"
            row["target_s"] = TARGETS["argus query"]
        elif name != "duckdb one-liner":
            row["target_s"] = TARGETS["command"]
        rows.append(row)
    rows.append({"command": "mcp initialize", "wall_s": spread(mcp_wall),
                 "cpu_s": spread(mcp_cpu), "target_s": TARGETS["mcp initialize"]})
    rows.append({"command": "10 ingests, one file each", "cpu_s": spread(ingest_each),
                 "ratio": statistics.median(a / b for a, b in
                                            zip(ingest_each, ingest_one, strict=True)),
                 "peer": "one argus ingest of the 10 files", "target_ratio": TARGETS["ingest"]})
    rows.append({"command": "one argus ingest of the 10 files", "cpu_s": spread(ingest_one)})
    doc = {"load_average": load, "rounds": args.rounds, "ingest_rounds": args.ingest_rounds,
           "cpus": os.cpu_count(), "results": rows}
    if args.json:
        print(json.dumps(doc, indent=1))
        return
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs; median (range) of "
          f"{args.rounds} rounds, ingest {args.ingest_rounds}")
    for r in rows:
        key = "wall_s" if "wall_s" in r else "cpu_s"
        s = r[key]
        assert isinstance(s, dict)
        unit = "s wall" if key == "wall_s" else "s CPU"
        line = f"{r['command']:34} {s['median']:7.3f} {unit} ({s['min']:.3f}-{s['max']:.3f})"
        if "ratio" in r:
            line += f"  {r['ratio']:.2f}x {r['peer']}"
        if "target_s" in r:
            line += f"  target {r['target_s']} s"
        if "target_ratio" in r:
            line += f"  target {r['target_ratio']}x"
        print(line)


if __name__ == "__main__":
    main()
