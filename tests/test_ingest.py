from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.ingest import ingest_path
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.conftest import DEMO, KERNELS, ROOT

JSONL = DEMO / "softmax" / "softmax.cupti.jsonl"


def test_ingest_keys_rows_and_binds_kernel_region(store: Store) -> None:
    r = ingest_path(store, JSONL, ProgramSource.from_path(KERNELS / "softmax.py"),
                    {"target": "sm_90"})
    # The program's kernel (20 launches) is the program version's; the trace's 7 other
    # launches (torch's own kernels) are a timeline run of an unbound version of their own.
    assert r.rows["evidence"] == 20 and not r.already
    assert r.other is not None and r.other["rows"]["evidence"] == 7
    rows = store.rows("SELECT program_version, region_id, count(*) AS n FROM evidence "
                      "WHERE signal = 'duration' GROUP BY ALL ORDER BY n")
    assert rows == [{"program_version": r.other["program_version"], "region_id": None, "n": 7},
                    {"program_version": r.program_version, "region_id": "softmax/softmax_fwd",
                     "n": 20}]
    run = store.rows(f"SELECT * FROM run WHERE run_id = '{r.run_id}'")[0]
    assert run["signature"] == "activity_tracing" and run["timing_clean"]
    ver = store.rows(f"SELECT * FROM program_version WHERE program_version = "
                     f"'{r.program_version}'")[0]
    assert ver["target"] == "sm_90" and ver["program"] == "softmax"


def test_same_artefact_twice_does_not_duplicate(store: Store) -> None:
    prog = ProgramSource.from_path(KERNELS / "softmax.py")
    ingest_path(store, JSONL, prog)
    again = ingest_path(store, JSONL, prog)
    assert again.already
    assert store.sql("SELECT count(*) FROM observed_evidence").fetchone() == (27,)


def test_changed_source_is_a_new_version(store: Store) -> None:
    prog = ProgramSource.from_path(KERNELS / "softmax.py")
    a = ingest_path(store, JSONL, prog)
    b = ingest_path(store, JSONL, ProgramSource(prog.name, prog.text + "\n# tweak\n"))
    assert a.program_version != b.program_version and not b.already


def test_program_without_the_kernel_is_refused(store: Store) -> None:
    with pytest.raises(InputError, match="none of its kernels"):
        ingest_path(store, JSONL, ProgramSource.from_path(KERNELS / "matmul.py"))
    assert store.sql("SELECT count(*) FROM run").fetchone() == (0,)


def test_killed_ingest_leaves_no_partial_run(tmp_path: Path) -> None:
    """A process killed inside the ingest transaction leaves the store without that run."""
    db = tmp_path / "k.duckdb"
    open_store(db, create=True).close()
    big = tmp_path / "big.cupti.jsonl"
    lines = JSONL.read_text().splitlines()
    kern = [json.loads(ln) for ln in lines if "CONCURRENT_KERNEL" in ln]
    with open(big, "w") as fh:
        for rep in range(8000):  # later copies shifted in time: repeated records are refused
            for rec in kern:
                shift = rep * 10**9
                fh.write(json.dumps({**rec, "start": rec["start"] + shift,
                                     "end": rec["end"] + shift}) + "\n")
    script = (
        "import sys, argusdb.collectors.cupti.activity as a\n"
        "from argusdb.store import open_store\nfrom argusdb.store.embedded import Store\n"
        "from argusdb.ingest import ingest_path\n"
        "a._BATCH = 1000\n"
        "import argusdb.ingest as ing; ing.APPEND_ROWS = 1000  # append as the rows come\n"
        "orig = Store.append_batch\n"
        "def slow(self, *args, **kw):\n"
        "    n = orig(self, *args, **kw); print('batch', flush=True)\n"
        "    import time; time.sleep(0.05); return n\n"
        "Store.append_batch = slow\n"
        f"ingest_path(open_store({str(db)!r}), {str(big)!r})\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    for _ in range(5):
        assert proc.stdout.readline().startswith("batch")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.1)
    with open_store(db, read_only=True) as st:
        assert st.sql("SELECT count(*) FROM run").fetchone() == (0,)
        assert st.sql("SELECT count(*) FROM observed_evidence").fetchone() == (0,)
        assert st.sql("SELECT count(*) FROM kernel_launch").fetchone() == (0,)
