"""Start-up of ``argus query``: what it loads, and the table layout that replaced rich's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from argusdb.cli.output import _plain, _plain_fits, _rich

ROOT = Path(__file__).resolve().parents[2]

#: Modules a small checked question must not load (each costs tens of ms or MiB at start).
HEAVY = ("pandas", "scipy", "rich", "argusdb.ingest", "argusdb.observe.planner.build",
         "argusdb.answers.report", "pyarrow.compute")

PROBE = """
import json, sys
from argusdb.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_query_loads_no_heavy_module(tmp_path: Path) -> None:
    from argusdb.api import connect
    from argusdb.api.checked import refresh_metadata
    from argusdb.demo import QUESTION, build

    store = tmp_path / "demo.duckdb"
    with connect(store, create=True) as db:
        build(db.store)
        refresh_metadata(db.store)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PROBE, "query", str(store), QUESTION],
                         env=env, capture_output=True, text=True, check=True)
    assert "matmul/matmul_kernel" in out.stdout
    loaded = set(json.loads(out.stderr.strip().splitlines()[-1]))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    # Asked again of the unchanged store, the check is kept (argusdb.api.kept): neither the
    # checker's parser nor Arrow loads, and the answer is the same.
    again = subprocess.run([sys.executable, "-c", PROBE, "query", str(store), QUESTION],
                           env=env, capture_output=True, text=True, check=True)
    assert again.stdout == out.stdout
    loaded = set(json.loads(again.stderr.strip().splitlines()[-1]))
    assert not loaded & {"sqlglot", "pyarrow", "numpy", "argusdb.checker"}, \
        sorted(m for m in loaded if m.split(".")[0] in ("sqlglot", "pyarrow", "numpy"))


text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.lists(text, min_size=n, max_size=n),
    st.lists(st.lists(text, min_size=n, max_size=n), max_size=5),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_plain_layout_is_richs(table: tuple[list[str], list[list[str]], list[bool]]) -> None:
    columns, cells, numeric = table
    numeric = [n and bool(cells) for n in numeric]
    if _plain_fits(columns, cells, numeric):
        assert _plain(columns, cells, numeric) == _rich(columns, cells, numeric)
    else:  # blanks at the ends of a right-aligned column: rich lays it out
        assert any(c != c.strip() for line in (columns, *cells)
                   for c, n in zip(line, numeric, strict=True) if n)


def test_answers_load_neither_pandas_nor_scipy_stats(tmp_path: Path) -> None:
    """``report``, ``diff`` and ``trajectory`` read Arrow columns from buffers and bind no
    parameters, so pandas (~0.4 s CPU) never loads; the rank test is argusdb's own, so
    ``scipy.stats`` (~0.5 s) does not either. About 10 s: three whole commands, each a fresh
    process, are what it checks."""
    from argusdb.api import connect
    from argusdb.demo import build

    store = tmp_path / "demo.duckdb"
    configs = ("bk64_s3", "bk32_s1")
    with connect(store, create=True) as db:
        build(db.store)
        for c in configs:  # the two matmul configurations timed on the H200
            db.ingest(ROOT / "tests" / "data" / "gpu" / f"matmul.{c}.run1.cupti.jsonl",
                      program=ROOT / "argusdb" / "demo" / "kernels" / "matmul.py",
                      options={"config": c, "target": "sm_90"})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    region = ["--region", "matmul/matmul_kernel"]
    a, b = (f"config={c}" for c in configs)
    for args in (["report", str(store), "--region", "softmax/softmax_fwd"],
                 ["diff", str(store), *region, "--from", a, "--to", b],
                 ["trajectory", str(store), *region, "--versions", f"{a},{b}"]):
        out = subprocess.run([sys.executable, "-c", PROBE, *args], env=env,
                             capture_output=True, text=True, check=True)
        assert "duration" in out.stdout or "softmax" in out.stdout, out.stdout
        loaded = set(json.loads(out.stderr.strip().splitlines()[-1]))
        assert not loaded & {"pandas", "scipy.stats"}, (args[0], sorted(
            loaded & {"pandas", "scipy.stats"}))
