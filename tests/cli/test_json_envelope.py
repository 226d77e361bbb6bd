"""Every data command's ``--json`` prints one JSON document in one envelope: ``{"ok": true,
...}`` on success, ``{"ok": false, "errors": [...]}`` on error (issue: "one success envelope
for every --json")."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import DEMO, KERNELS

JSONL = str(DEMO / "softmax" / "softmax.cupti.jsonl")
SOFTMAX = str(KERNELS / "softmax.py")
#: Commands that print no data: the MCP server speaks its own protocol on stdout.
NOT_DATA = {"mcp"}


def _not_json(token: str) -> None:
    """Strict RFC 8259: ``NaN`` and ``Infinity`` are Python's, not JSON (JSON.parse refuses)."""
    raise AssertionError(f"{token} in a --json document")


def _run(*args: str) -> tuple[int, dict[str, object]]:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, f"{args}: expected one JSON line on stdout, got {res.stdout!r}"
    doc = json.loads(lines[0], parse_constant=_not_json)
    assert isinstance(doc, dict) and isinstance(doc.get("ok"), bool), doc
    assert next(iter(doc)) == "ok"
    return res.exit_code, doc


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two versions of softmax (the same CUPTI trace under two option sets)."""
    st = str(tmp_path_factory.mktemp("env") / "s.duckdb")
    for v in ("a", "b"):
        code, doc = _run("ingest", st, JSONL, "--program", SOFTMAX, "--option", f"variant={v}",
                         "--json")
        assert code == 0 and doc["ok"] is True and len(doc["runs"]) == 1  # type: ignore[arg-type]
    return st


def _cases(store: str, tmp: Path) -> list[tuple[str, ...]]:
    region = "softmax/softmax_fwd"
    return [
        ("init", str(tmp / "new.duckdb")),
        ("ingest", store, JSONL, "--program", SOFTMAX, "--option", "variant=a"),
        ("query", store, "SELECT count(*) AS n FROM run"),
        ("query", store, "SELECT 'nan'::DOUBLE AS a, 'inf'::DOUBLE AS b, 1e308 * 10 AS c"),
        ("check", store, "SELECT count(*) AS n FROM run"),
        ("explain", store, "SELECT count(*) AS n FROM run"),
        ("runs", store),
        ("runs", store, "--snapshots"),
        ("conserve", store),
        ("report", store, "--region", region, "--version", "variant=a"),
        ("diff", store, "--region", region, "--from", "variant=a", "--to", "variant=b",
         "--signal", "duration"),
        ("trajectory", store, "--region", region, "--versions", "variant=a;variant=b",
         "--signal", "duration"),
        ("export", store, str(tmp / "q.parquet"), "--format", "parquet", "--query",
         "SELECT count(*) AS n FROM run"),
        ("regions", SOFTMAX),
        ("schema",),
        ("schema", "evidence"),
        ("copy", store, str(tmp / "copy.duckdb")),
        ("observe", SOFTMAX, "--region", f"{region}/load", "--signals", "duration",
         "--dry-run"),
    ]


def test_every_data_command_answers_in_the_envelope(store: str, tmp_path: Path) -> None:
    seen = set()
    for args in _cases(store, tmp_path):
        code, doc = _run(*args, "--json")
        assert code == 0, (args, doc)
        assert doc["ok"] is True, (args, doc)
        seen.add(args[0])
    # every data command but those that need a GPU, matplotlib, a multi-process launch or a
    # shared store's PostgreSQL (lake: tests/store/test_lake_inplace.py)
    assert seen >= set(main.commands) - NOT_DATA - {"dashboard", "demo", "launch",
                                                      "variant-check", "lake"}


def test_errors_use_the_same_envelope(store: str, tmp_path: Path) -> None:
    for args in [("variant-check", store, "nope", "--parent", "p", "--rel-err", "0"),
                 ("query", str(tmp_path / "missing.duckdb"), "SELECT 1"),
                 ("launch", "diff", store, "--from", "a", "--to", "b"),
                 ("regions", str(tmp_path))]:
        code, doc = _run(*args, "--json")
        assert code == 2 and doc["ok"] is False and doc["errors"], (args, doc)
    code, doc = _run("check", store, "SELECT median(value) FROM evidence", "--json")
    assert code == 1 and doc["ok"] is False and doc["errors"]


def test_every_data_command_takes_the_shared_output_options() -> None:
    """``--json`` on every data command (launch's subcommands included), all from
    ``output_options``: one help text."""
    ctx = click.Context(main)
    commands: list[click.Command] = []
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        assert cmd is not None
        if isinstance(cmd, click.Group):
            commands += [cmd.commands[n] for n in cmd.list_commands(ctx)]
        elif name not in NOT_DATA:
            commands.append(cmd)
    helps = set()
    for cmd in commands:
        opts = {o.name: o for o in cmd.params if isinstance(o, click.Option)}
        assert "as_json" in opts, cmd.name
        helps.add(opts["as_json"].help)
    assert len(helps) == 1


def test_non_finite_numbers_are_null_in_strict_json(store: str) -> None:
    """A DOUBLE column's NaN and infinities print as null (the envelope is strict JSON)."""
    code, doc = _run("query", store, "SELECT 'nan'::DOUBLE AS a, '-inf'::DOUBLE AS b, "
                     "0.5::DOUBLE AS c", "--json")
    assert code == 0 and doc["rows"] == [[None, None, 0.5]]


def test_trace_files_are_strict_json(tmp_path: Path) -> None:
    """``wire.dump`` (trace and region-tree exports) rewrites a document with a NaN from the
    start of the file, as null, and leaves a finite one as json.dump writes it."""
    from argusdb.answers.wire import dump

    out = tmp_path / "t.json"
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("")
        dump({"traceEvents": [{"ts": 1.5, "dur": float("nan")}], "x": [float("inf")]}, fh)
    assert json.loads(out.read_text(), parse_constant=_not_json) == {
        "traceEvents": [{"ts": 1.5, "dur": None}], "x": [None]}
    with open(out, "w", encoding="utf-8") as fh:
        dump({"a": [1, 2.5]}, fh)
    assert out.read_text() == json.dumps({"a": [1, 2.5]})
