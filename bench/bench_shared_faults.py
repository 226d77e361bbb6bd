"""Faults during shared-store ingests: PostgreSQL restarted under ``argus ingest``, and the
``argus ingest`` process killed with SIGKILL (docs/shared-store.md, "Faults").

Run: ``python -m bench.bench_shared_faults [--restarts 10] [--kills 10] [--files 3]``.

It starts a PostgreSQL server of its own (``initdb`` in a temporary folder, a free port of
127.0.0.1; the ``postgresql`` package's binaries), creates one lake on it, then for each round
starts ``argus ingest URI F1..Fn --json`` on ``--files`` new recordings (the concurrency test's
distinct CUPTI recordings, ``20 + k`` launches each) and, after a random delay within the time
a clean command took (5-70 % of it), restarts the server (``pg_ctl restart -m fast``) or kills
the command (SIGKILL); rounds whose command had already ended are run again
(``missed_rounds``). Afterwards it reads the lake and counts, against what each command printed:

- ``tracebacks``: commands whose output holds a Python traceback;
- ``partial_runs``: runs whose launches are not all there, rows of a run that is not stored;
- ``stored_reported_failed``: recordings stored although their command said it failed;
- ``reported_stored_lost``: recordings a command reported stored that the lake does not hold;
- what each restart round answered (exit code, runs stored) and how long it took.

Prints one JSON object (``--json-out FILE`` also writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from argusdb.store import open_store
from tests.store.conftest import lake_uri
from tests.store.pgserver import Server, pg_bin
from tests.store.worker import BASE_LAUNCHES, KERNELS, recording

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from argusdb.cli import main; main()"]
PROGRAM = KERNELS / "softmax.py"


def _ingest(uri: str, files: list[Path]) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "ingest", uri, *map(str, files), "--program", str(PROGRAM),
                             "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _stored(out: str) -> set[str]:
    """The recordings an ``argus ingest --json`` answer reports stored (new or already)."""
    try:
        answer = json.loads(out)
    except ValueError:
        return set()
    return {Path(r["path"]).name for r in answer.get("runs") or [] if r.get("run_id")}


def _round(uri: str, files: list[Path], fault: str, server: Server, delay: float
           ) -> dict[str, Any]:
    t0 = time.monotonic()
    proc = _ingest(uri, files)
    time.sleep(delay)
    faulted = proc.poll() is None          # the fault came while the command still ran
    if fault == "restart":
        server.restart()
    elif fault == "kill" and faulted:
        os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    return {"fault": fault, "hit": faulted, "rc": proc.returncode,
            "s": round(time.monotonic() - t0, 2),
            "traceback": "Traceback" in out + err, "reported": sorted(_stored(out)),
            "files": [f.name for f in files],
            "error": "" if proc.returncode == 0 else (out or err)[-300:],
            "traceback_text": err[-4000:] if "Traceback" in out + err else ""}


def _check(uri: str, rounds: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    with open_store(uri, read_only=True) as st:
        launches = st.rows("SELECT r.run_id, count(k.run_id) AS n FROM run r "
                           "LEFT JOIN kernel_launch k USING (run_id) GROUP BY ALL")
        orphans = st.rows("SELECT count(*) AS n FROM kernel_launch WHERE run_id NOT IN "
                          "(SELECT run_id FROM run)")[0]["n"]
        orphans += st.rows("SELECT count(*) AS n FROM observed_evidence WHERE run_id NOT IN "
                           "(SELECT run_id FROM run)")[0]["n"]
    # Which recordings are stored: ingest them all again, each answers "already" or lands now.
    names = sorted({f for r in rounds for f in r["files"]})
    proc = subprocess.run([*CLI, "ingest", uri, *(str(folder / n) for n in names), "--program",
                           str(PROGRAM), "--json"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900)
    again = json.loads(proc.stdout)["runs"]
    stored = {Path(r["path"]).name for r in again if r["already_ingested"]}
    k_of = {Path(r["path"]).name: int(Path(r["path"]).name.split("-")[1].split(".")[0])
            for r in again}
    run_of = {r["run_id"]: Path(r["path"]).name for r in again}
    partial = [r for r in launches
               if r["run_id"] not in run_of or r["n"] != BASE_LAUNCHES + k_of[run_of[r["run_id"]]]]
    failed = [r for r in rounds if r["rc"] != 0 and not (r["fault"] == "kill" and r["hit"])]
    return {
        "tracebacks": sum(r["traceback"] for r in rounds),
        "partial_runs": len(partial) + orphans,
        "stored_reported_failed": sorted(set(f for r in failed for f in r["files"]
                                             if f not in r["reported"]) & stored),
        "reported_stored_lost": sorted({f for r in rounds for f in r["reported"]} - stored),
        "runs_stored": len(stored), "recordings": len(names),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--restarts", type=int, default=10)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--files", type=int, default=4, help="recordings per ingest command")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    binary = pg_bin()
    if binary is None or not (binary / "initdb").exists():
        raise SystemExit("bench_shared_faults: no PostgreSQL server binaries (initdb, pg_ctl); "
                         "install Debian's 'postgresql' package")
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="argus-faults-"))
    tmp.chmod(0o755)            # the postgres user reaches its folder below
    (tmp / "pg").mkdir()
    server = Server(tmp / "pg", binary)
    try:
        uri = lake_uri(server.conninfo, tmp)
        open_store(uri, create=True).close()
        # A clean command first: how long one takes here, so that each fault comes while the
        # next one runs (at 5-70 % of that time); a round the fault missed (the command had
        # ended) is not counted, and another is run, up to 3 times the rounds asked for.
        rounds = [_round(uri, [recording(i * args.files + j + 1, tmp)
                               for j in range(args.files)], "none", server, 0.0)
                  for i in range(2)]
        took = rounds[-1]["s"]       # the second: the first also warms the lake
        want = {"restart": args.restarts, "kill": args.kills}
        i = 2
        while any(want.values()) and i <= 3 * (args.restarts + args.kills):
            fault = rng.choice([f for f, n in want.items() if n])
            files = [recording(i * args.files + j + 1, tmp) for j in range(args.files)]
            rounds.append(_round(uri, files, fault, server, rng.uniform(0.05, 0.7) * took))
            want[fault] -= rounds[-1]["hit"]
            i += 1
            print(json.dumps({k: rounds[-1][k] for k in ("fault", "hit", "rc", "s")}),
                  file=sys.stderr)
        hits = [r for r in rounds[2:] if r["hit"]]
        out = {"restarts": sum(r["fault"] == "restart" for r in hits),
               "kills": sum(r["fault"] == "kill" for r in hits),
               "missed_rounds": sum(not r["hit"] for r in rounds[2:]),
               "clean_ingest_s": took, "files_per_ingest": args.files,
               **_check(uri, rounds, tmp),
               "restart_rounds": [{k: r[k] for k in ("rc", "s", "reported", "error")}
                                  for r in hits if r["fault"] == "restart"],
               "tracebacks_seen": [r["traceback_text"] for r in rounds if r["traceback"]]}
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
