"""``.ci/postgres``: each run gets a free port and a folder of its own, never reuses a server it
finds, and stops only what it started (two CI runs on one machine used to share port 55432
and one folder, and the first to finish stopped and deleted the other's server)."""

from __future__ import annotations

import glob
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / ".ci" / "postgres"

pytestmark = pytest.mark.skipif(not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                                reason="needs Debian's postgresql package (the script would "
                                       "install it)")


def _pg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def _port(conninfo: str) -> int:
    return int(dict(kv.split("=", 1) for kv in conninfo.split())["port"])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_two_runs_side_by_side_each_stop_only_their_own() -> None:
    # as .ci/run makes them: mktemp -d (a folder the server's user can reach, unlike pytest's)
    a, b = (Path(tempfile.mkdtemp(prefix="argus-ci-pg-test.")) for _ in range(2))
    started: list[Path] = []
    try:
        ra = _pg("start", a)
        assert ra.returncode == 0, ra.stderr
        started.append(a)
        rb = _pg("start", b)
        assert rb.returncode == 0, rb.stderr
        started.append(b)
        pa, pb = _port(ra.stdout), _port(rb.stdout)
        assert pa != pb and _answers(pa) and _answers(pb)
        assert _pg("stop", a).returncode == 0
        started.remove(a)
        assert not a.exists() and not _answers(pa)
        assert _answers(pb), "stopping one run's server stopped the other's"
    finally:
        for d in started:
            _pg("stop", d)
        for d in (a, b):
            shutil.rmtree(d, ignore_errors=True)


def test_a_folder_in_use_is_never_reused(tmp_path: Path) -> None:
    d = tmp_path / "used"
    d.mkdir()
    (d / "PG_VERSION").write_text("15\n")
    res = _pg("start", d)
    assert res.returncode == 1 and "not empty" in res.stderr
    assert sorted(p.name for p in d.iterdir()) == ["PG_VERSION"]


def test_stop_leaves_alone_what_start_did_not_make(tmp_path: Path) -> None:
    d = tmp_path / "other"
    (d / "data").mkdir(parents=True)
    (d / "data" / "postmaster.pid").write_text("1\n")
    res = _pg("stop", d)
    assert res.returncode == 1 and "left alone" in res.stderr
    assert (d / "data" / "postmaster.pid").exists()


def test_usage(tmp_path: Path) -> None:
    assert _pg("start").returncode == 2
    assert _pg("restart", tmp_path).returncode == 2
