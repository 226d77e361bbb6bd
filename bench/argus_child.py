"""``argus ingest`` in a child process: its wall time, CPU time and own peak RSS.

The peak is the child's ``VmHWM``, read by the child itself as it exits (a ``getrusage`` of
children reports the larger of the child's peak and the parent's RSS at fork, see
``bench/bench_big.py``). Shared, with the table columns of its results, by the memory benches
(``bench_nsys_memory.py``, ``bench_trace_memory.py``).

Example:
    >>> got = ingest_child(Path("/tmp/s.duckdb"), [Path("/tmp/x.sqlite")])
    >>> sorted(got)
    ['cpu_s', 'peak_mib', 'rows', 'wall_s']
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """\
import atexit, json, sys
from argusdb.cli import main
OUT = sys.argv.pop(1)
def _peak():
    hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM")]
    with open(OUT, "w") as fh:
        json.dump({"peak_mib": int(hwm[0]) / 1024}, fh)
atexit.register(_peak)
sys.argv[0] = "argus"
main()
"""


def ingest_child(store: Path, paths: list[Path], *extra: str) -> dict[str, float]:
    """Run ``argus ingest --json STORE PATHS...`` in a fresh interpreter.

    Returns:
        ``wall_s`` and ``cpu_s`` (user + system, the child's rusage) in seconds, ``peak_mib``
        (the child's own peak resident set, MiB), ``rows`` (evidence and other rows written).

    Raises:
        SystemExit: the command failed (its stderr is the message).
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        peak_file, out, err = (Path(tmp) / n for n in ("peak.json", "stdout", "stderr"))
        with open(out, "wb") as fo, open(err, "wb") as fe:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(peak_file), "ingest",
                                     "--json", str(store), *map(str, paths), *extra],
                                    env=env, stdout=fo, stderr=fe)
            # wait4 rather than wait: the child's CPU time too
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"argus ingest {' '.join(map(str, paths))} failed: "
                             f"{err.read_text()}")
        peak = json.loads(peak_file.read_text())["peak_mib"]
        rows = sum(n for r in json.loads(out.read_text())["runs"] for n in r["rows"].values())
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": peak,
            "rows": rows}


#: The header of the columns :func:`ingest_cells` writes.
INGEST_HEADER = f"{'ingest peak MiB':>16} {'ingest s':>9} {'CPU s':>7} {'s/GB':>6} {'rows':>10}"


def ingest_cells(got: dict[str, float], gb: float) -> str:
    """An :func:`ingest_child` result as the columns of :data:`INGEST_HEADER` (``gb``: the
    input's size, for seconds per GB)."""
    return (f"{got['peak_mib']:>16.0f} {got['wall_s']:>9.1f} {got['cpu_s']:>7.1f} "
            f"{got['wall_s'] / gb:>6.0f} {got['rows']:>10,}")


def ingest_once(store: Path, path: Path) -> dict[str, float]:
    """:func:`ingest_child` of ``path`` into the new ``store``, then both removed (the next,
    larger input needs the room)."""
    got = ingest_child(store, [path])
    path.unlink()
    for f in store.parent.glob(f"{store.name}*"):
        f.unlink()
    return got
