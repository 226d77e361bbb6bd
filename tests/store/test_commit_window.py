"""The commit window: a writer that stops at any step of the commit path, followed by any damage
to the write-ahead log, never leaves a store that opens without a run it committed.

Each case ingests the softmax artefacts into a checkpointed store, then ingests the matmul
artefacts in a process that ends itself (``os._exit``) at one step of the commit path. Which of
the matmul runs were committed is read from an undamaged copy of what the process left; each
damaged copy must then either open holding all of them, or be refused with a message naming
each of them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from argusdb.errors import StoreError
from argusdb.store import open_store
from tests.conftest import DEMO, KERNELS, ROOT

#: Where the writer stops: just before each step of the commit path, and after the last.
STEPS = ("snapshot", "committing_write", "marker", "commit", "after_commit", "checkpoint",
         "unlink", "done")

#: Damages to the log, as a fault injector would do them.
DAMAGES = ("removed", "emptied", "halved", "cut_100", "cut_1", "flip_last", "flip_middle")

_WRITER = r'''
import os, sys
from pathlib import Path
import argusdb.store.embedded as emb
from argusdb.store import Store, open_store
from argusdb.ingest import ingest_path
from argusdb.collectors.regions import ProgramSource

db, step, demo, kernels = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
armed = False

def die(at):
    if armed and at == step:
        print("stopped at", at, flush=True)
        os._exit(0)

class Cursor:
    def __init__(self, cur): self._c = cur
    def __getattr__(self, name): return getattr(self._c, name)
    def execute(self, sql, *args):
        if "'committing'" in sql:
            die("committing_write")
        return self._c.execute(sql, *args)

class Con(Cursor):
    def execute(self, sql, *args):
        head = sql.strip().split(None, 1)[0].upper()
        if head == "COMMIT":
            die("commit")
        elif head == "CHECKPOINT":
            die("checkpoint")
        return self._c.execute(sql, *args)
    def cursor(self): return Cursor(self._c.cursor())

before_commit, write_marker = Store._before_commit, getattr(emb, "_write_marker", None)
after_commit, unlink = Store._after_commit, Path.unlink
def _before_commit(self):
    die("snapshot"); return before_commit(self)
def _write_marker(marker, record):
    die("marker"); return write_marker(marker, record)
def _after_commit(self):
    die("after_commit"); return after_commit(self)
def _unlink(self, *a, **kw):
    if self.name.endswith(".argus-pending"):
        die("unlink")
    return unlink(self, *a, **kw)
Store._before_commit, emb._write_marker = _before_commit, _write_marker
Store._after_commit, Path.unlink = _after_commit, _unlink

st = open_store(db, create=True)
st.con.execute("SET checkpoint_threshold = '10GB'")  # no automatic checkpoint of the log
st.con = Con(st.con)
ingest_path(st, demo / "softmax" / "softmax.cupti.jsonl",
            ProgramSource.from_path(kernels / "softmax.py"))
armed = True
ingest_path(st, demo / "matmul" / "matmul.cupti.jsonl",
            ProgramSource.from_path(kernels / "matmul.py"))
die("done")
'''


def _damage(wal: Path, how: str) -> None:
    if not wal.exists():
        return
    n = wal.stat().st_size
    if how == "removed":
        wal.unlink()
    elif how == "emptied":
        os.truncate(wal, 0)
    elif how == "halved":
        os.truncate(wal, n // 2)
    elif how.startswith("cut_"):
        os.truncate(wal, max(n - int(how[4:]), 0))
    elif n:
        at = n - 1 if how == "flip_last" else n // 2
        with open(wal, "r+b") as fh:
            fh.seek(at)
            b = fh.read(1)
            fh.seek(at)
            fh.write(bytes([b[0] ^ 0xFF]))


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        shutil.copy2(f, dst / f.name)
    return dst / "s.duckdb"


def _runs(db: Path) -> set[str]:
    with open_store(db, read_only=True) as st:
        return {r["run_id"] for r in st.rows("SELECT run_id FROM run")}


@pytest.mark.parametrize("step", STEPS)
def test_no_committed_run_vanishes_silently(tmp_path: Path, step: str) -> None:
    left = tmp_path / "left"
    left.mkdir()
    out = subprocess.run([sys.executable, "-c", _WRITER, str(left / "s.duckdb"), step,
                          str(DEMO), str(KERNELS)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"stopped at {step}" in out.stdout
    # What was committed: the runs an undamaged copy holds (it must open: no false alarm).
    intact = _copy(left, tmp_path / "intact")
    with open_store(intact) as st:
        runs = {r["run_id"] for r in st.rows("SELECT run_id FROM run")}
    first = 2   # softmax: the program's run and the timeline run of torch's kernels
    if STEPS.index(step) >= STEPS.index("after_commit"):
        assert len(runs) == first + 2, runs   # the matmul runs landed
    else:
        assert len(runs) == first, runs       # nothing of the matmul ingest committed
    # Only runs not yet checkpointed into the store file can go with the log.
    at_risk = runs - _runs_checkpointed(left)
    silent: list[str] = []
    for how in DAMAGES:
        db = _copy(left, tmp_path / how)
        _damage(db.with_name("s.duckdb.wal"), how)
        try:
            have = _runs(db)
        except StoreError as exc:
            assert all(r in str(exc) for r in at_risk), (how, str(exc))
            assert "argus-pending" in str(exc) or "write-ahead log" in str(exc)
            continue
        if not runs <= have:
            silent.append(f"{how}: {sorted(runs - have)} missing")
    assert not silent, silent


def _runs_checkpointed(left: Path) -> set[str]:
    """The runs the store file holds without its log (what a removed log leaves)."""
    tmp = left.parent / "file-only"
    if not tmp.exists():
        tmp.mkdir()
        shutil.copy2(left / "s.duckdb", tmp / "s.duckdb")
    with open_store(tmp / "s.duckdb") as st:   # no marker here: opens as the file stands
        return {r["run_id"] for r in st.rows("SELECT run_id FROM run")}
