"""``argus launch``: ingest two recorded launches, diff them, trace one; user errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from argusdb.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "gpu" / "xlayer"
PROGRAM = str(ROOT / "tools" / "h200" / "xlayer" / "tp_block.py")


def _ingest_both(r: CliRunner, store: str) -> dict[str, str]:
    """``argus launch ingest`` of the serial and the overlapped 2-rank launch: each version."""
    versions = {}
    for v in ("serial", "overlap"):
        out = r.invoke(main, ["launch", "ingest", store, str(DATA / f"xl-{v}-events-1"),
                              "--program", PROGRAM, "--option", f"version={v}",
                              "--option", "target=sm_90", "--json"])
        assert out.exit_code == 0, out.output
        doc = json.loads(out.output)
        assert doc["world_size"] == 2 and len(doc["runs"]) == 2
        versions[v] = doc["runs"][0]["program_version"]
    return versions


def test_ingest_diff_trace(tmp_path: Path) -> None:
    r = CliRunner()
    store = str(tmp_path / "s.duckdb")
    versions = _ingest_both(r, store)
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


def test_launch_diff_takes_the_selectors_of_argus_diff(tmp_path: Path) -> None:
    """``version=serial`` and an 8-character prefix resolve as ``argus diff`` resolves them;
    the text table carries units."""
    r = CliRunner()
    store = str(tmp_path / "s.duckdb")
    versions = _ingest_both(r, store)
    by_option = r.invoke(main, ["launch", "diff", store, "--from", "version=serial", "--to",
                                "version=overlap", "--json"])
    by_prefix = r.invoke(main, ["launch", "diff", store, "--from", versions["serial"][:8],
                                "--to", versions["overlap"][:8], "--json"])
    assert by_option.exit_code == by_prefix.exit_code == 0, by_option.output
    a, b = json.loads(by_option.output), json.loads(by_prefix.output)
    assert a["rows"] == b["rows"] and a["rows"]
    assert (a["from"], a["to"]) == (versions["serial"], versions["overlap"])
    text = r.invoke(main, ["launch", "diff", store, "--from", "version=serial", "--to",
                           "version=overlap"])
    assert text.exit_code == 0
    ex = next(ln for ln in text.stdout.splitlines() if ln.startswith("exposed_communication"))
    assert " µs" in ex and "e+" not in text.stdout
    wrong = r.invoke(main, ["launch", "diff", store, "--from", "version=nope", "--to",
                            "version=overlap"])
    assert wrong.exit_code == 2 and "timing-clean" not in wrong.stderr


def test_one_rank_missing_exits_2(tmp_path: Path) -> None:
    one = next((DATA / "xl-serial-events-1").glob("*rank0*"))
    out = CliRunner().invoke(main, ["launch", "ingest", str(tmp_path / "s.duckdb"), str(one)])
    assert out.exit_code == 2 and "not of all 2 ranks" in out.output
