"""``argus ingest`` draws a progress bar on a terminal, and nowhere else."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: A real Nsight Systems export (1,312 launches): its reader states its row count.
NSYS = ROOT / "tests" / "data" / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"
ARGUS = "import sys; from argusdb.cli import main; sys.argv[0] = 'argus'; main()"


def _ingest(store: Path, stderr_tty: bool) -> tuple[int, bytes, bytes]:
    """Run ``argus ingest`` with stderr on a pseudo-terminal (or a pipe); exit code, stdout,
    everything written to stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not stderr_tty:
        done = subprocess.run([sys.executable, "-c", ARGUS, "ingest", str(store), str(NSYS)],
                              env=env, capture_output=True)
        return done.returncode, done.stdout, done.stderr
    leader, follower = os.openpty()
    # a terminal 30 rows by 100 columns (a new pseudo-terminal is 0 by 0: no room for a bar)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", ARGUS, "ingest", str(store), str(NSYS)],
                            env=env, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    err = b""
    while True:
        try:
            chunk = os.read(leader, 1 << 16)
        except OSError:  # the terminal's other end closed (Linux: EIO)
            break
        if not chunk:
            break
        err += chunk
    os.close(leader)
    out = proc.stdout.read() if proc.stdout else b""
    return proc.wait(), out, err


def test_bar_on_a_terminal(tmp_path: Path) -> None:
    code, out, err = _ingest(tmp_path / "s.duckdb", stderr_tty=True)
    assert code == 0, err
    assert b"1312 evidence" in out
    # the phases, in order, then every byte of the export counted before the refresh
    for phase in (b"check:", b"ingest:", b"refresh: 100%"):
        assert phase in err, err
    assert err.index(b"check:") < err.index(b"ingest:") < err.index(b"refresh:")
    size = f"{NSYS.stat().st_size / 1e6:.2f}M".encode()
    assert size in err, err


def test_no_bar_in_a_pipe(tmp_path: Path) -> None:
    code, out, err = _ingest(tmp_path / "s.duckdb", stderr_tty=False)
    assert code == 0, err
    assert b"1312 evidence" in out
    assert err == b""
