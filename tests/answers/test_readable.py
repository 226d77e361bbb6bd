"""Answers a person reads say their units, name their cohorts and print no reprs: the diff,
trajectory and report of the H200 matmul recordings (tests/data/gpu/README.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from argusdb.answers.report import report
from argusdb.api import connect
from argusdb.cli import main
from tests.answers.test_h200_versions import KERNEL, build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("readable") / "h200.duckdb"
    build_store(path).close()
    yield str(path)


def _run(*args: str) -> tuple[list[str], str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines(), r.stderr


def _readable(text: str) -> None:
    assert not re.search(r"\de[+-]\d", text), "exponent notation"
    assert "nan" not in text.split() and "NULL" not in text
    assert not re.search(r"[{\[]'|\{'", text), "a Python repr"


def test_the_unattributed_region_is_not_judged_against_the_threshold(store: str) -> None:
    """0.1 % of matmul's instructions sit on unmarked lines: the region holding them is no
    region of the source, and the message says so instead of "above the 5 % threshold"."""
    with connect(store, read_only=True) as db:
        (claim,) = report(db, f"{KERNEL}/_unattributed", signals=["inst_executed"]).claims
    gap = claim.gaps[0]
    assert gap["kind"] == "unattributed" and claim.verdict == "insufficient"
    assert gap["message"] == (
        "matmul/matmul_kernel/_unattributed is not a region of the source: it holds 0.1 % of "
        "matmul/matmul_kernel's inst_executed, on lines no region marker covers")
    assert "threshold" not in claim.reason and "--region" not in gap["remedy"]


def test_diff_names_units_and_the_cohorts_of_one_signal(store: str) -> None:
    lines, err = _run("diff", store, "--region", KERNEL, "--from", "config=bk64_s3", "--to",
                      "config=bn256_s3")
    assert lines[0].split() == ["signal", "from", "to", "ratio", "95%", "CI", "p", "n",
                                "from/to", "verdict"]
    assert lines[1].split()[:5] == ["duration", "210.3", "µs", "195.9", "µs"]
    assert "< 0.0001" in lines[1] and "120/60" in lines[1]
    assert "config=bk64_s3 (" in err
    _readable("\n".join(lines) + err)
