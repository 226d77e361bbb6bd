from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import DEMO, GPU_KERNELS, KERNELS

JSONL = str(DEMO / "softmax" / "softmax.cupti.jsonl")


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_ingest_json_contract(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    assert run("init", db)[0] == 0
    code, out, _ = run("ingest", db, JSONL, "--program", str(KERNELS / "softmax.py"),
                       "--option", "num_warps=4", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["runs"][0]["rows"]["evidence"] == 27
    assert len(doc["runs"][0]["program_version"]) == 16


def test_query_json_contract(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    run("ingest", db, JSONL, "--program", str(KERNELS / "softmax.py"))
    code, out, _ = run("query", db, "SELECT count(*) AS n FROM evidence WHERE region_id = "
                       "'softmax/softmax_fwd'", "--json")
    assert code == 0 and json.loads(out) == {"ok": True, "columns": ["n"], "rows": [[20]]}


def test_bad_input_exit_2_with_file_problem_fix(tmp_path: Path) -> None:
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"\x00\x01garbage")
    db = str(tmp_path / "s.duckdb")
    code, _, err = run("ingest", db, str(bad))
    assert code == 2 and "x.bin" in err and "unknown artefact format" in err
    assert "Traceback" not in err


def test_bad_option_is_usage_error(tmp_path: Path) -> None:
    code, out, _ = run("ingest", str(tmp_path / "s.duckdb"), JSONL, "--option", "nonsense",
                       "--json")
    assert code == 2 and json.loads(out)["ok"] is False


def test_regions_json(tmp_path: Path) -> None:
    code, out, _ = run("regions", str(KERNELS / "softmax.py"), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] is True
    assert {"region_id": "softmax/softmax_fwd/load", "start_line": 12,
            "end_line": 13} in doc["regions"]


def test_demo_answers(tmp_path: Path) -> None:
    code, out, _ = run("demo", str(tmp_path / "d.duckdb"))
    assert code == 0 and "softmax/softmax_fwd" in out and "matmul/matmul_kernel" in out


def test_conserve_and_demo_region_breakdown(tmp_path: Path) -> None:
    db = str(tmp_path / "d.duckdb")
    code, out, _ = run("demo", db)
    assert code == 0
    assert "softmax/softmax_fwd/reduce" in out and "inst_entropy_bits" in out
    code, out, _ = run("conserve", db, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["conserved"] is True
    kernels = {r[1] for r in doc["rows"]}
    assert kernels == {"softmax_fwd", "matmul_kernel"}
    code, out, _ = run("conserve", db)
    assert code == 0 and "softmax_fwd" in out


def test_variant_ingest_check_and_derived_evidence(tmp_path: Path) -> None:
    gpu = Path(__file__).resolve().parent.parent / "data" / "gpu"
    parent_src = GPU_KERNELS / "softmax.py"
    db = str(tmp_path / "v.duckdb")
    code, out, _ = run("ingest", db, str(gpu / "softmax.default.run1.cupti.jsonl"),
                       "--program", str(parent_src), "--json")
    parent = json.loads(out)["runs"][0]["program_version"]
    variant_src = tmp_path / "softmax.py"   # the variant keeps the parent's file name
    variant_src.write_text((gpu / "variants" / "softmax.default.fw_load.py").read_text())
    code, out, _ = run("ingest", db, str(gpu / "softmax.default.fw_load.cupti.jsonl"),
                       "--program", str(variant_src), "--parent-version", parent, "--json")
    assert code == 2 and "--transform" in json.loads(out)["errors"][0]["message"]
    code, out, _ = run("ingest", db, str(gpu / "softmax.default.fw_load.cupti.jsonl"),
                       "--program", str(variant_src), "--parent-version", parent,
                       "--transform", "forced_wait:softmax/softmax_fwd/load", "--json")
    variant = json.loads(out)["runs"][0]["program_version"]
    assert code == 0 and variant != parent
    code, out, _ = run("variant-check", db, variant, "--parent", parent, "--rel-err", "0.5")
    assert code == 1 and "result differs" in out
    q = "SELECT count(*) FROM evidence WHERE evidence_class = 'derived'"
    assert json.loads(run("query", db, q, "--json")[1])["rows"] == [[0]]
    code, out, _ = run("variant-check", db, variant, "--parent", parent, "--rel-err", "0")
    assert code == 0 and "same result" in out
    assert json.loads(run("query", db, q, "--json")[1])["rows"] == [[1]]
