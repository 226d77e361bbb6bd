"""Every command, called with bad arguments, answers with a clear error and exit 2, never a
traceback (issue: "No tracebacks").

The matrix pairs each command with the bad inputs a newcomer gives it: a store that is not a
store (missing, a text file, a folder), a source that is not Python or not Triton, an output in a
missing folder or over an existing file, and nonsense option values.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import DEMO, KERNELS

ROOT = Path(__file__).resolve().parents[2]
JSONL = str(DEMO / "softmax" / "softmax.cupti.jsonl")


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bad")
    text = d / "notes.txt"
    text.write_text("not a store\n")
    syntax = d / "broken.py"
    syntax.write_text("import triton\n@triton.jit\ndef k(x:\n    pass  # region a\n")
    store = d / "s.duckdb"
    assert CliRunner().invoke(main, ["ingest", str(store), JSONL, "--program",
                                     str(KERNELS / "softmax.py")]).exit_code == 0
    existing = d / "existing.html"
    existing.write_text("x")
    return {"text": str(text), "dir": str(d), "missing": str(d / "missing.duckdb"),
            "syntax": str(syntax), "readme": str(ROOT / "README.md"), "store": str(store),
            "existing": str(existing), "nodir": str(d / "no" / "such" / "dir" / "x.parquet")}


CASES: list[tuple[str, ...]] = [
    ("regions", "{readme}"),
    ("regions", "{syntax}"),
    ("regions", "{dir}"),
    ("regions", "{missing}"),
    ("query", "{missing}", "SELECT 1"),
    ("query", "{text}", "SELECT 1"),
    ("query", "{dir}", "SELECT 1"),
    ("check", "{text}", "SELECT 1"),
    ("explain", "{dir}", "SELECT 1"),
    ("runs", "{text}"),
    ("runs", "{missing}"),
    ("conserve", "{dir}"),
    ("report", "{text}", "--region", "softmax/softmax_fwd"),
    ("report", "{store}", "--region", "no/such/region"),
    ("diff", "{missing}", "--region", "a/b", "--from", "x", "--to", "y"),
    ("diff", "{store}", "--region", "softmax/softmax_fwd", "--from", "zz", "--to", "yy"),
    ("trajectory", "{text}", "--versions", "a,b"),
    ("trajectory", "{store}", "--versions", "zz,yy"),
    ("export", "{store}", "{dir}", "--format", "parquet", "--query", "SELECT 1 AS x"),
    ("export", "{store}", "{nodir}", "--format", "parquet", "--query", "SELECT 1 AS x"),
    ("export", "{text}", "{nodir}", "--format", "parquet", "--query", "SELECT 1 AS x"),
    ("export", "{store}", "{dir}", "--format", "perfetto", "--run", "nosuchrun"),
    ("dashboard", "{store}", "--out", "{existing}"),
    ("dashboard", "{text}", "--out", "{dir}"),
    ("ingest", "{text}", JSONL),
    ("ingest", "{dir}", JSONL),
    ("ingest", "{store}", "{syntax}"),
    ("ingest", "{store}", JSONL, "--program", "{syntax}"),
    ("ingest", "{store}", JSONL, "--program", "{readme}"),
    ("init", "{dir}"),
    ("init", "{text}"),
    ("demo", "{text}"),
    ("demo", "{store}"),
    ("variant-check", "{text}", "v", "--parent", "p", "--rel-err", "0"),
    ("copy", "{text}", "{missing}"),
    ("copy", "{store}", "{store}"),
    ("copy", "{store}", "{text}"),
    ("runs", "{store}", "--as-of", "zz"),
    ("query", "{store}", "SELECT 1", "--as-of", "999"),
    ("observe", "{syntax}", "--region", "broken/k/a", "--signals", "duration", "--dry-run"),
    ("observe", "{readme}", "--region", "x/y", "--signals", "duration", "--dry-run"),
    ("launch", "ingest", "{text}", JSONL),
    ("launch", "ingest", "{store}", JSONL),
    ("launch", "ingest", "{store}", "{dir}"),
    ("launch", "ingest", "{store}", "{missing}"),
    ("launch", "diff", "{text}", "--from", "a", "--to", "b"),
    ("launch", "diff", "{store}", "--from", "a", "--to", "b"),
    ("launch", "trace", "{store}", "nosuchgroup", "{nodir}"),
    ("launch", "trace", "{missing}", "g", "{nodir}"),
]


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c[:2]) for c in CASES])
def test_bad_arguments_give_a_clear_error(case: tuple[str, ...], bad: dict[str, str]) -> None:
    args = [a.format(**bad) for a in case]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"argus {' '.join(args)} raised {result.exception!r}")
    assert "Traceback" not in result.output
    assert result.exit_code == 2, (args, result.exit_code, result.output)
    err = result.stderr.strip()
    assert err, "the error is printed on stderr"
