"""``argus diff --fail-on regression[=PCT]``: exit 4 on a significant change in the wrong
direction, on the H200 matmul recordings (bn256_s3 -> bk64_s3 is 7.35 % slower)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from argusdb.answers.diff import diff, regressions
from argusdb.cli import main
from argusdb.cli.cmd_diff import REGRESSION_EXIT
from tests.answers.test_h200_versions import KERNEL, build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("gate") / "h200.duckdb"
    build_store(path).close()
    yield str(path)


def _diff(store: str, before: str, after: str, *extra: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["diff", store, "--region", KERNEL, "--from", before, "--to",
                                  after, "--signal", "duration", *extra])
    return r.exit_code, r.stdout, r.stderr


def test_a_slowdown_fails_the_gate_with_exit_4(store: str) -> None:
    code, out, err = _diff(store, "config=bn256_s3", "config=bk64_s3", "--fail-on", "regression")
    assert code == REGRESSION_EXIT == 4
    assert "higher by 7.35 %" in out
    assert "regression: duration higher by 7.35 % (1.0735x, threshold 0 %)" in err


@pytest.mark.parametrize(("threshold", "code"), [("regression=5", 4), ("regression=7.3", 4),
                                                 ("regression=7.4", 0), ("regression=10", 0)])
def test_the_threshold_is_a_percentage(store: str, threshold: str, code: int) -> None:
    assert _diff(store, "config=bn256_s3", "config=bk64_s3", "--fail-on", threshold)[0] == code


def test_a_speedup_passes_and_without_the_option_nothing_fails(store: str) -> None:
    assert _diff(store, "config=bk64_s3", "config=bn256_s3", "--fail-on", "regression")[0] == 0
    assert _diff(store, "config=bn256_s3", "config=bk64_s3")[0] == 0


def test_noise_does_not_fail_the_gate(store: str) -> None:
    """bk64_s3 timed twice: its second run against its first is within the noise floor."""
    import argusdb

    with argusdb.connect(store, read_only=True) as db:
        first, second = (r["run_id"] for r in db.store.rows(
            "SELECT run_id FROM run WHERE artefact_name LIKE '%bk64_s3.run_.cupti.jsonl' "
            "ORDER BY artefact_name"))
    code, out, _ = _diff(store, first, second, "--fail-on", "regression")
    assert code == 0 and "not significant" in out


def test_json_lists_the_regressed_signals(store: str) -> None:
    code, out, _ = _diff(store, "config=bn256_s3", "config=bk64_s3", "--fail-on", "regression",
                         "--json")
    doc = json.loads(out)
    assert code == 4 and doc["ok"] and doc["regressions"] == ["duration"]
    code, out, _ = _diff(store, "config=bk64_s3", "config=bn256_s3", "--fail-on", "regression",
                         "--json")
    assert code == 0 and json.loads(out)["regressions"] == []


@pytest.mark.parametrize("bad", ["progression", "regression=x", "regression=-1",
                                 "regression=nan"])
def test_a_bad_condition_is_a_usage_error(store: str, bad: str) -> None:
    code, _, err = _diff(store, "config=bn256_s3", "config=bk64_s3", "--fail-on", bad)
    assert code == 2 and "regression=" in err and "Traceback" not in err


def test_instruction_counts_have_no_direction_and_never_regress(store: str) -> None:
    import argusdb

    with argusdb.connect(store, read_only=True) as db:
        slower = diff(db, KERNEL, "config=bn256_s3", "config=bk64_s3", ["duration"])
        assert [r.signal for r in regressions(slower)] == ["duration"]
        assert regressions(slower, 0.08) == []
        (row,) = slower.rows
        row.signal, row.unit = "inst_executed", "inst"  # same numbers, a count
        assert regressions(slower) == []
