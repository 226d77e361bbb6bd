"""Many small files read by worker processes: the same rows as a serial read, the same refusal."""

from __future__ import annotations

import hashlib
import pickle
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.errors import InputError
from argusdb.ingest import ingest_paths, prepare
from argusdb.ingest import pool as ingest_pool
from argusdb.ingest.pool import WORKERS_ENV, read_artefacts, workers_for
from argusdb.store import open_store
from argusdb.store.embedded import Store
from bench.common import source_pages
from tests.conftest import DEMO

SOFTMAX = DEMO / "softmax"
#: Every table ingest writes for these artefacts, with the columns that do not depend on
#: when the command ran.
TABLES = {
    "observed_evidence": "*",
    "instruction": "*",
    "run": "* EXCLUDE (ingested_at)",
    "task": "* EXCLUDE (wall_s, finished_at)",
    "program_version": "*",
}


def _pages(tmp_path: Path, n: int) -> list[Path]:
    """``n`` distinct source pages (the bench's: the H200 softmax page, its kernel renamed),
    with the other recorded artefacts of the kernel between them."""
    out = source_pages(n, tmp_path)
    others = [shutil.copy(SOFTMAX / f, tmp_path / f) for f in
              ("softmax.sass", "softmax.ttgir", "softmax.raw.csv", "softmax.cupti.jsonl")]
    return out[:3] + [Path(p) for p in others] + out[3:]


def _bad(path: Path) -> Path:
    """A source page with a word where an instruction count should be."""
    lines = (SOFTMAX / "softmax.source.csv").read_text().splitlines(keepends=True)
    sass = next(i for i, ln in enumerate(lines) if ln.startswith('"","","0x'))
    fields = lines[sass].rstrip("\n").split('","')
    fields[4] = "lots"
    lines[sass] = '","'.join(fields) + "\n"
    path.write_text("".join(lines))
    return path


def _contents(st: Store) -> dict[str, list[tuple[object, ...]]]:
    return {t: st.sql(f"SELECT {cols} FROM {t} ORDER BY ALL").fetchall()
            for t, cols in TABLES.items()}


def test_workers_store_the_rows_a_serial_read_stores(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    files = _pages(tmp_path, 10)
    monkeypatch.setattr(ingest_pool, "spare_cores", lambda: 2.0)
    got = {}
    for workers in ("0", "2"):
        monkeypatch.setenv(WORKERS_ENV, workers)
        prepared = prepare(files)
        # (parsed ahead on two idle cores, the rows are appended on one DuckDB thread)
        assert (prepared.workers, prepared.parsed_ahead, prepared.append_threads) == \
            ((0, False, 1) if workers == "0" else (2, True, 1))
        with open_store(tmp_path / f"w{workers}.duckdb", create=True) as st:
            results = ingest_paths(st, files, prepared=prepared)
            assert [r.path for r in results] == [str(f) for f in files]
            got[workers] = _contents(st)
    assert got["0"] == got["2"]
    assert len(got["0"]["observed_evidence"]) > 10 * 10_000


def test_files_past_the_parse_budget_are_parsed_as_they_are_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _pages(tmp_path, 8)
    monkeypatch.setattr(ingest_pool, "PARSE_BYTES", 3 * files[0].stat().st_size)
    pooled = read_artefacts(files, workers=2)
    serial = read_artefacts(files, workers=0)
    assert pooled.workers == 2 and not pooled.parsed_ahead
    for a, b in zip(pooled.artefacts, serial.artefacts, strict=True):
        assert (a.path, a.kind, a.kernels, a.meta) == (b.path, b.kind, b.kernels, b.meta)
        assert [(t, x.to_pydict()) for t, x in a.batches()] == \
            [(t, x.to_pydict()) for t, x in b.batches()]


def test_a_bad_file_in_a_parallel_batch_is_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _pages(tmp_path, 10)
    files.insert(6, _bad(tmp_path / "broken.source.csv"))
    store = tmp_path / "s.duckdb"
    with open_store(store, create=True) as st:
        ingest_paths(st, [SOFTMAX / "softmax.sass"])
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    monkeypatch.setenv(WORKERS_ENV, "2")
    r = CliRunner().invoke(main, ["ingest", str(store), *map(str, files), "--json"])
    assert r.exit_code == 2, r.output
    assert "broken.source.csv" in r.output and "'lots' is not a number" in r.output
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    with open_store(store) as st, pytest.raises(InputError, match=r"broken\.source\.csv"):
        ingest_paths(st, files)
    with open_store(store) as st:
        assert st.sql("SELECT count(*) FROM run").fetchone() == (1,)


def test_the_first_bad_file_in_order_is_named(tmp_path: Path) -> None:
    files = _pages(tmp_path, 9)
    files.insert(2, _bad(tmp_path / "first.source.csv"))
    files.append(tmp_path / "missing.source.csv")
    for workers in (0, 2):
        with pytest.raises(InputError) as err:
            read_artefacts(files, workers=workers)
        assert Path(err.value.path).name == "first.source.csv"


def test_workers_only_for_many_small_files_on_spare_cores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(ingest_pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(ingest_pool, "spare_cores", lambda: 2.0)
    small, large = 85_000, ingest_pool.SMALL_BYTES + 1
    assert workers_for([small] * 8) == 2
    assert workers_for([small] * 7 + [large] * 5) == 0      # too few small files
    monkeypatch.setattr(ingest_pool, "spare_cores", lambda: 1.5)
    assert workers_for([small] * 100) == 0                  # other work on a core
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert workers_for([small] * 2) == 3                    # fixed by the environment
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert workers_for([small] * 100) == 0


def test_workers_on_a_busy_machine_leave_the_appends_one_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(ingest_pool, "spare_cores", lambda: -3.0)
    files = _pages(tmp_path, 8)
    assert read_artefacts(files).workers == 0
    got = read_artefacts(files, workers=2)
    assert (got.workers, got.parsed_ahead, got.append_threads) == (2, True, 1)


def test_an_input_error_crosses_processes_whole() -> None:
    err = pickle.loads(pickle.dumps(InputError("a.csv", "is bad", "fix it")))
    assert (err.path, err.problem, err.fix, str(err)) == \
        ("a.csv", "is bad", "fix it", "a.csv: is bad. fix it")


def test_argus_ingest_locks_duckdb_at_the_threads_its_reading_chose(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argusdb import api

    seen: list[str] = []
    connect = api.Connection.__init__

    def spy(self: api.Connection, *args: object, **kwargs: object) -> None:
        connect(self, *args, **kwargs)  # type: ignore[arg-type]
        row = self.store.con.execute("SELECT current_setting('threads')").fetchone()
        seen.append(str(row[0]) if row else "?")

    monkeypatch.setattr(api.Connection, "__init__", spy)
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(ingest_pool, "APPEND_THREADS_AHEAD", 2)  # the plumbing, not the policy
    files = _pages(tmp_path, 8)
    store = str(tmp_path / "s.duckdb")
    for spare, threads in ((2.0, "2"), (0.0, "1")):
        monkeypatch.setattr(ingest_pool, "spare_cores", lambda spare=spare: spare)
        r = CliRunner().invoke(main, ["ingest", store, *map(str, files), "--json"])
        assert r.exit_code == 0, r.output
        assert seen[-1] == threads
    with open_store(store) as st:
        assert st.sql("SELECT count(*) FROM run").fetchone() == (len(files),)


def test_importing_ingest_registers_no_exit_handler() -> None:
    """The launcher's hooks import argusdb's runner (and so ingest) while the interpreter shuts
    down, when a module may no longer register exit handlers: the process pool's modules are
    imported only where workers start."""
    import subprocess
    import sys

    code = ("import sys, argusdb.ingest, argusdb.observe.runner; "
            "print(sorted(m for m in ('multiprocessing', 'concurrent.futures.process') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
