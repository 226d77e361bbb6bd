"""CPU time and peak memory of starting ``argus``, against DuckDB's own client.

Builds the demo store (``argus demo``, the shipped H200 recordings) in a temporary folder, then
runs each command ``--rounds`` times in a fresh interpreter and reports the median CPU time
(user + system, the child's ``getrusage``) and peak RSS:

- ``argus --help``;
- ``argus query STORE SQL`` (checked, read-only, printed as a table), for the README's first
  question (median launch time per region) and its region breakdown;
- the peer: ``python -c "import duckdb"``, open the store read-only, run the same SQL and print
  the rows.

Bytecode is written once before timing (an installed wheel has it). Run:
``python bench/bench_start.py [--rounds 5] [--sql "SELECT ..."]``.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent



def _demo_questions() -> tuple[str, str]:
    """The README's questions (``argusdb.demo``), read from source: this process stays small,
    since a child's peak RSS counts the parent's pages until it execs."""
    tree = ast.parse((ROOT / "argusdb" / "demo" / "__init__.py").read_text(encoding="utf-8"))
    consts = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            value = n.value.func.value if isinstance(n.value, ast.Call) \
                and isinstance(n.value.func, ast.Attribute) else n.value  # """...""".strip()
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                consts[n.targets[0].id] = value.value.strip()
    return consts["QUESTION"], consts["REGION_BREAKDOWN"]


ARGUS = ("import sys; from argusdb.cli import main; sys.argv[0] = 'argus'; "
         "sys.exit(main())")
PEER = ("import sys, duckdb; con = duckdb.connect(sys.argv[1], read_only=True); "
        "[print(*r) for r in con.execute(sys.argv[2]).fetchall()]")


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one child process."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[2:]} failed: {err}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sql", help="another question instead of the README's two")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "demo.duckdb")
        subprocess.run([py, "-c", ARGUS, "demo", store], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times, breakdown = _demo_questions()
        questions = {"": args.sql} if args.sql else {" (times)": times,
                                                      " (breakdown)": breakdown}
        cases = {"argus --help": [py, "-c", ARGUS, "--help"]}
        for label, sql in questions.items():
            cases[f"argus query{label}"] = [py, "-c", ARGUS, "query", store, sql]
            cases[f"duckdb + SQL{label}"] = [py, "-c", PEER, store, sql]
        for argv in cases.values():  # bytecode and page cache warm
            measure(argv, env)
        res = {name: [measure(argv, env) for _ in range(args.rounds)]
               for name, argv in cases.items()}
    load = os.getloadavg()[0]
    print(f"load average {load:.1f}; median of {args.rounds} rounds")
    peer_cpu = statistics.median(c for c, _ in next(v for k, v in res.items()
                                                     if k.startswith("duckdb")))
    for name, runs in res.items():
        cpu = statistics.median(c for c, _ in runs)
        rss = statistics.median(r for _, r in runs)
        print(f"{name:26} {cpu:6.3f} s CPU  {rss:6.1f} MiB peak  "
              f"({cpu / peer_cpu:.1f}x the DuckDB client's CPU)")


if __name__ == "__main__":
    main()
