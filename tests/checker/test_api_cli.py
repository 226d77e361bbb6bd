"""The Python API and the CLI over the checked query language, on real recorded artefacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb import connect
from argusdb.cli import main
from argusdb.errors import QueryRefused


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_query_answers_real_timing(demo_path: Path, ids: dict[str, str]) -> None:
    with connect(demo_path, read_only=True) as db:
        t = db.query("SELECT region_id, program_version, count(*) AS n, median(value) AS med "
                     "FROM evidence WHERE signal = 'duration' AND region_id IS NOT NULL "
                     "GROUP BY ALL ORDER BY region_id, program_version")
    rows = t.to_pylist()
    # 20 softmax launches per version (the recording traced 20), medians from the recording
    assert {(r["region_id"], r["n"], r["med"]) for r in rows} == {
        ("matmul/matmul_kernel", 20, 210814.5), ("softmax/softmax_fwd", 20, 32544.0)}
    assert len(rows) == 3


def test_check_returns_findings_with_position_and_remedy(demo_path: Path,
                                                         ids: dict[str, str]) -> None:
    with connect(demo_path, read_only=True) as db:
        [f] = db.check("SELECT\n  median(value) FROM evidence")
    assert (f.code, f.name, f.line, f.col) == ("AR01", "version.mixed", 2, 3)
    assert sorted(f.extra["program_versions"]) == sorted(
        [ids["V1"], ids["V2"], ids["VM"], ids["TS"], ids["TM"]])
    assert "version_diff" in f.remedy


def test_refused_query_raises_with_findings(demo_path: Path) -> None:
    with connect(demo_path, read_only=True) as db, pytest.raises(QueryRefused) as err:
        db.query("SELECT avg(value) FROM evidence")
    assert err.value.findings[0].code == "AR01"


def test_explain_names_versions_runs_classes_signatures(seeded_path: Path,
                                                        ids: dict[str, str]) -> None:
    with connect(seeded_path, read_only=True) as db:
        prov = db.explain("SELECT e.launch, e.value FROM evidence e "
                          f"WHERE e.program_version = '{ids['V1']}' AND e.signal = 'duration'")
    assert prov["ok"] and prov["program_versions"] == [ids["V1"]]
    assert set(prov["runs"]) == {ids["R1"], ids["RN"], ids["RP"], ids["RR"]}
    assert prov["evidence_classes"] == ["observed"]
    assert set(prov["interference_signatures"]) == {
        "activity_tracing", "replay(3 passes, full)+clock:none",
        "activity_tracing+instrumentation(proton)", "launch_replay+activity_tracing+cache:all"}
    # the softmax trace holds 27 kernel launches: V1 has softmax_fwd's 20 (the 7 torch
    # launches are a timeline run of their own version), and 2 seed rows each
    assert prov["rows"] == 20 + 2 + 2 + 2
    assert prov["sources"][0]["predicates"] == [f"program_version = '{ids['V1']}'",
                                                "signal = 'duration'"]


def test_explain_records_constructs_and_acknowledgements(seeded_path: Path,
                                                         ids: dict[str, str]) -> None:
    with connect(seeded_path, read_only=True) as db:
        prov = db.explain("SELECT d.value / o.value FROM evidence_accepting('class_mix') d "
                          "JOIN evidence o USING (program_version, region_id, launch) "
                          f"WHERE d.signal = 'exposed_latency' AND o.run_id = '{ids['R1']}' "
                          "AND o.signal = 'duration'")
        table = db.query(f"SELECT * FROM version_diff('duration', '{ids['V1']}', "
                         f"'{ids['V2']}')")
    assert prov["ok"]
    assert prov["acknowledgements"] == [{"acknowledges": "class_mix", "rule": "AR04",
                                         "line": 1, "col": 31}]
    assert prov["evidence_classes"] == ["derived", "observed"]
    # the same recorded trace under two versions: equal medians, like for like per signature
    clean = [r for r in table.to_pylist() if r["signature"] == "activity_tracing"]
    assert [(r["region_id"], r["from_median"], r["ratio"], r["from_rows"]) for r in clean] == [
        ("softmax/softmax_fwd", 32544.0, 1.0, 20)]


def test_cli_query_json_refusal_envelope(demo_path: Path) -> None:
    code, out, _ = run("query", str(demo_path), "SELECT median(value) FROM evidence", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["ok"] is False
    e = doc["errors"][0]
    assert {"code", "message", "line", "col", "remedy"} <= e.keys() and e["code"] == "AR01"


def test_cli_query_json_answer_records_constructs(demo_path: Path,
                                                  ids: dict[str, str]) -> None:
    code, out, _ = run("query", str(demo_path), "SELECT region_id, ratio FROM version_diff("
                       f"'duration', '{ids['V1']}', '{ids['V2']}')", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["rows"] == [["softmax/softmax_fwd", 1.0]]
    assert doc["constructs"][0]["construct"] == "version_diff"


def test_cli_csv_and_check_and_explain(demo_path: Path) -> None:
    code, out, _ = run("query", str(demo_path), "SELECT signal, count(*) AS n FROM evidence "
                       "GROUP BY signal", "--csv")
    # softmax_fwd's 20 launches twice (two versions), matmul_kernel's 20, and the traces'
    # other kernels once each as timeline runs (7 + 13)
    assert code == 0 and out.splitlines() == ["signal,n", "duration,80"]
    assert run("check", str(demo_path), "SELECT * FROM read_csv('/etc/passwd')")[0] == 1
    code, out, _ = run("check", str(demo_path), "SELECT run_id FROM run", "--json")
    assert code == 0 and json.loads(out) == {"ok": True, "errors": []}
    code, out, _ = run("explain", str(demo_path), "SELECT value FROM evidence WHERE region_id "
                       "= 'matmul/matmul_kernel'")
    assert code == 0 and "activity_tracing" in out and "matmul" in out


def test_cli_usage_and_engine_errors_exit_2(demo_path: Path, tmp_path: Path) -> None:
    assert run("query", str(tmp_path / "missing.duckdb"), "SELECT 1")[0] == 2
    code, out, _ = run("query", str(demo_path), "SELECT 1 / 'x'", "--json")
    assert code == 2 and json.loads(out)["errors"][0]["code"] == "E101"
