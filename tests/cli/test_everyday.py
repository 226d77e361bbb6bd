"""Everyday CLI: folders and globs to ingest, $ARGUS_STORE as the default store, -v and -q."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import DATA

GPU = DATA / "gpu"
#: The H200 timing runs of matmul's three configurations (four files).
TIMINGS = sorted(GPU.glob("matmul.*.run*.cupti.jsonl"))


@pytest.fixture(autouse=True)
def _quiet_logger() -> Iterator[None]:
    """-v/-q set the argusdb logger's level; put it back for the next test."""
    log = logging.getLogger("argusdb")
    level = log.level
    yield
    log.setLevel(level)


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    return r.exit_code, r.stdout, r.stderr


def test_a_quoted_glob_ingests_what_it_matches(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    code, out, err = run("ingest", db, str(GPU / "matmul.*.run*.cupti.jsonl"), "--json")
    assert code == 0, err
    got = sorted(Path(r["path"]).name for r in json.loads(out)["runs"])
    assert got == [p.name for p in TIMINGS] and len(got) == 4


def test_a_glob_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    code, out, err = run("ingest", str(db), str(GPU / "nothing.*.cupti.jsonl"))
    assert code == 2 and "the pattern matches no file" in out + err
    assert "Traceback" not in out + err and not db.exists()


def test_argus_store_is_the_default_store(tmp_path: Path) -> None:
    db = tmp_path / "env.duckdb"
    env = {"ARGUS_STORE": str(db)}
    code, _, err = run("ingest", str(TIMINGS[0]), env=env)  # STORE left out
    assert code == 0, err
    code, out, _ = run("runs", "--json", env=env)
    assert code == 0 and len(json.loads(out)["rows"]) == 1
    # a STORE given on the command line wins over $ARGUS_STORE
    other = tmp_path / "other.duckdb"
    assert run("ingest", str(other), str(TIMINGS[1]), env=env)[0] == 0
    assert len(json.loads(run("runs", str(other), "--json", env=env)[1])["rows"]) == 1
    assert len(json.loads(run("runs", "--json", env=env)[1])["rows"]) == 1


def test_verbose_says_what_was_read_and_quiet_says_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    code, _, err = run("-v", "ingest", db, str(TIMINGS[0]))
    assert code == 0
    assert f"argus: ingest {TIMINGS[0]}: cupti.activity_jsonl, run " in err
    code, out, err = run("-v", "query", db, "SELECT count(*) AS n FROM run")
    assert code == 0 and "argus: query: 1 rows in" in err
    code, out, err = run("-q", "ingest", db, str(TIMINGS[1]))
    assert code == 0 and err == "" and "run" in out  # data still on stdout
