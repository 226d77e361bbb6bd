"""A throw-away PostgreSQL server that a test or a benchmark owns (restarts it, stops it):
``initdb`` into a folder of its own, ``pg_ctl`` as the ``postgres`` user when run as root."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path


def pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    cands = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return cands[-1].parent if cands else None


class Server:
    """A PostgreSQL server of the caller's own (so it may restart, stop and start it), on a
    free port of 127.0.0.1, its data and socket under ``root``."""

    def __init__(self, root: Path, binary: Path) -> None:
        self.bin, self.data = binary, root / "data"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        root.chmod(0o777)
        self._as_pg([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U",
                     "postgres"])
        self.start()

    def _as_pg(self, cmd: list[str]) -> None:
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        # the server inherits no pipe of ours (it writes to its log file)
        subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)

    def ctl(self, *args: str) -> None:
        self._as_pg([str(self.bin / "pg_ctl"), "-D", str(self.data), *args])

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def start(self) -> None:
        self.ctl("start", "-w", "-o", f"-p {self.port} -k {self.data.parent} "
                 "-c listen_addresses=127.0.0.1 -c fsync=off", "-l",
                 str(self.data.parent / "log"))

    def restart(self) -> None:
        self.ctl("restart", "-m", "fast", "-w", "-l", str(self.data.parent / "log"))

    def stop(self) -> None:
        self.ctl("stop", "-m", "immediate")
