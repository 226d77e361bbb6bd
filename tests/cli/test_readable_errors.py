"""Errors a person reads: the cause on one line, the fix on the next; observe's live task table
in human units."""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb import demo
from argusdb.cli import main
from argusdb.errors import UsageError
from argusdb.store import open_store
from tests.runner.replay import PROGRAMS, RECORDED


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("errors") / "demo.duckdb"
    with open_store(path, create=True) as st:
        demo.build(st)
    return str(path)


def _err(*args: str) -> tuple[int, list[str]]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stderr.splitlines()


def test_an_unknown_version_names_the_known_ones_on_the_fix_line(store: str) -> None:
    code, err = _err("diff", store, "--region", "softmax/softmax_fwd", "--from", "nope",
                     "--to", "also")
    assert code == 2 and len(err) == 2
    assert err[0] == "error: version 'nope' matches no program version of this store"
    assert err[1].startswith("  fix: name one by ID prefix, run ID or KEY=VALUE")
    # options as KEY=VALUE, not a JSON document
    assert re.search(r"[0-9a-f]{16} cuda=13\.0 triton=3\.6\.0$", err[1])
    assert "{" not in err[1]


def test_a_short_prefix_and_a_missing_folder_say_what_to_do(store: str) -> None:
    code, err = _err("trajectory", store, "--versions", "ee,ee03")
    assert code == 2 and err == [
        "error: version 'ee' is too short to select a version",
        "  fix: give at least 4 characters of a program version or run ID, or KEY=VALUE of "
        "its --option values"]
    code, err = _err("report", store, "--region", "softmax/softmax_fwd", "--timeline",
                     "/nonexistent-folder/t.html")
    assert code == 2 and err == ["error: /nonexistent-folder/t.html: the folder "
                                 "/nonexistent-folder does not exist",
                                 "  fix: create it first or pass a path in an existing folder"]


def test_the_json_envelope_keeps_problem_and_fix_apart(store: str) -> None:
    r = CliRunner().invoke(main, ["diff", store, "--region", "softmax/softmax_fwd", "--from",
                                  "nope", "--to", "also", "--json"])
    (e,) = json.loads(r.stdout)["errors"]
    assert e["code"] == "E001" and e["message"] == f"{e['problem']}. {e['fix']}"


def test_a_usage_error_with_its_fix_crosses_processes() -> None:
    err = pickle.loads(pickle.dumps(UsageError("bad", "do this")))
    assert (err.problem, err.fix, str(err)) == ("bad", "do this", "bad. do this")


def test_observes_task_table_says_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """The live report's table (replayed from the H200 recording): wall and GPU time in s or
    ms, a missing GPU time as one mark, never NULL or bare seconds."""
    bundle = tmp_path / "bundle"
    shutil.copytree(RECORDED / "model", bundle)
    monkeypatch.chdir(PROGRAMS / "model")
    monkeypatch.setenv("ARGUS_REPLAY", str(bundle))
    r = CliRunner().invoke(main, ["observe", "--region", "fused_norm/layernorm_fwd/load",
                                  "--signals", "duration", "--store", str(tmp_path / "s.duckdb"),
                                  "--", "python3", "model.py"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    head = lines.index(next(ln for ln in lines if ln.startswith("task ")))
    assert lines[head].split() == ["task", "action", "run", "status", "wall", "GPU"]
    rows = lines[head + 1:lines.index("", head)]
    assert rows and "NULL" not in r.stdout
    for row in rows:
        wall, gpu = re.split(r"\s{2,}", row.strip())[-2:]
        assert re.fullmatch(r"[\d.]+ (s|ms|µs)", wall), row
        assert gpu == "–" or re.fullmatch(r"[\d.]+ (s|ms)", gpu), row
    assert any(re.split(r"\s{2,}", row.strip())[-1] == "–" for row in rows)  # no GPU
