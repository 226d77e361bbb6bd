"""Diffs of relabelled copies of one real recording: identical samples are never a change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.answers.diff import diff
from argusdb.answers.select import resolve_version
from argusdb.api import Connection
from argusdb.cli import main
from argusdb.errors import NoEvidence, UsageError

REGION = "matmul/matmul_kernel"


def test_identical_samples_are_not_significant(relabelled: Connection) -> None:
    r = diff(relabelled, REGION, "variant=a", "variant=b")
    (row,) = r.rows
    assert row.signal == "duration" and row.unit == "ns"
    assert row.n_from == row.n_to == 20
    # The recording's median launch (ns), read from matmul.cupti.jsonl.
    assert row.from_median == row.to_median == 210814.5
    assert row.ratio == 1.0 and row.p_value == 1.0
    assert row.ci_low < 1.0 < row.ci_high
    assert row.significant is False and row.verdict.startswith("not significant")
    assert row.noise_floor == 0.01 and "minimum effect" in row.noise_source


def test_version_selectors(relabelled: Connection) -> None:
    a = resolve_version(relabelled, "variant=a", REGION)
    assert resolve_version(relabelled, a.program_version[:6], REGION).program_version == \
        a.program_version
    run = relabelled.query(f"SELECT run_id FROM run WHERE program_version = "
                           f"'{a.program_version}'").to_pylist()[0]["run_id"]
    by_run = resolve_version(relabelled, run, REGION)
    assert by_run.program_version == a.program_version and by_run.runs == (run,)
    with pytest.raises(UsageError, match="matches 2 program versions"):
        resolve_version(relabelled, "variant=a")  # softmax has a variant=a too
    with pytest.raises(UsageError, match="matches no program version"):
        resolve_version(relabelled, "variant=zzz", REGION)


def test_unknown_region_is_a_usage_error_and_absent_signal_no_evidence(
        relabelled: Connection) -> None:
    with pytest.raises(UsageError, match="declared by no program version"):
        diff(relabelled, "matmul/nope", "variant=a", "variant=b")
    # A declared region without the signal: no evidence, with the observe request (exit 3).
    with pytest.raises(NoEvidence, match="has no inst_executed evidence") as exc:
        diff(relabelled, REGION, "variant=a", "variant=b", ["inst_executed"])
    assert exc.value.exit_code == 3
    assert exc.value.requests == [f"argus observe matmul.py --region {REGION} "
                                  f"--signals inst_executed"]


def test_cli_json_contract(relabelled: Connection, tmp_path: Path) -> None:
    path = relabelled.store.path
    relabelled.close()
    r = CliRunner().invoke(main, ["diff", path, "--region", REGION, "--from", "variant=a",
                                  "--to", "variant=b", "--signal", "duration", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    row = doc["rows"][0]
    assert {"region_id", "signal", "from_median", "to_median", "ratio", "ci_low", "ci_high",
            "significant"} <= set(row)
    assert row["region_id"] == REGION and row["significant"] is False
    bad = CliRunner().invoke(main, ["diff", path, "--region", REGION, "--from", "variant=a",
                                    "--to", "variant=zzz", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["ok"] is False
