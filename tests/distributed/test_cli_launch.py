"""``argus launch``: ingest two recorded launches, diff them, trace one; user errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from argusdb.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "gpu" / "xlayer"
PROGRAM = str(ROOT / "tools" / "h200" / "xlayer" / "tp_block.py")


def test_ingest_diff_trace(tmp_path: Path) -> None:
    r = CliRunner()
    store = str(tmp_path / "s.duckdb")
    versions = {}
    for v in ("serial", "overlap"):
        out = r.invoke(main, ["launch", "ingest", store, str(DATA / f"xl-{v}-events-1"),
                              "--program", PROGRAM, "--option", f"version={v}",
                              "--option", "target=sm_90", "--json"])
        assert out.exit_code == 0, out.output
        doc = json.loads(out.output)
        assert doc["world_size"] == 2 and len(doc["runs"]) == 2
        versions[v] = doc["runs"][0]["program_version"]
    out = r.invoke(main, ["launch", "diff", store, "--from", versions["serial"], "--to",
                          versions["overlap"], "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    rows = [dict(zip(doc["columns"], row, strict=True)) for row in doc["rows"]]
    ex = next(x for x in rows if x["quantity"] == "exposed_communication")
    assert ex["significant"] and ex["ratio"] < 0.7
    trace = tmp_path / "t.json"
    out = r.invoke(main, ["launch", "trace", store, "xl-overlap-events-1", str(trace)])
    assert out.exit_code == 0 and json.loads(trace.read_text())["traceEvents"]


def test_one_rank_missing_exits_2(tmp_path: Path) -> None:
    one = next((DATA / "xl-serial-events-1").glob("*rank0*"))
    out = CliRunner().invoke(main, ["launch", "ingest", str(tmp_path / "s.duckdb"), str(one)])
    assert out.exit_code == 2 and "not of all 2 ranks" in out.output
