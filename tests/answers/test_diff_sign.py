"""A diff across a sign change or from a median of 0 has no ratio: its change is the
difference in the signal's unit.

A derived ``exposed_latency`` (a forced-wait run's duration minus the clean one) can go from
negative to positive between two versions; ``to / from`` is then negative (-0.53 for -95 ns ->
50 ns) and says nothing about how much it grew. The store: the recorded matmul trace under two
version labels, with derived rows as the derivation module adds them (SEED values, eight
launches a side so that the rank test can find the change).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import argusdb
from argusdb.answers.diff import DiffRow, diff, human_table
from argusdb.api import Connection
from argusdb.cli import main
from tests.answers.conftest import MATMUL_TRACE
from tests.conftest import KERNELS

REGION = "matmul/matmul_kernel"
#: The SEED values of each version (ns): negative in a, positive in b, zero-median in z.
SEED = {"a": [-95.0, -97.0, -93.0, -96.0, -94.0, -95.0, -98.0, -92.0],
        "b": [50.0, 52.0, 48.0, 51.0, 49.0, 50.0, 53.0, 47.0],
        "z": [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 0.0],
        "c": [-40.0, -42.0, -38.0, -41.0, -39.0, -40.0, -43.0, -37.0]}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Connection, str]]:
    path = tmp_path / "sign.duckdb"
    db = argusdb.connect(path, create=True)
    for v in SEED:
        db.ingest(MATMUL_TRACE, KERNELS / "matmul.py", {"variant": v})
    runs = db.store.rows("SELECT r.run_id, r.program_version, v.options ->> 'variant' AS v "
                         "FROM run r JOIN program_version v USING (program_version) "
                         "WHERE v.program = 'matmul'")
    assert sorted(r["v"] for r in runs) == sorted(SEED)
    rows = [(-1 - 100 * i - j, r["program_version"], r["run_id"], str(j), x)
            for i, r in enumerate(runs) for j, x in enumerate(SEED[r["v"]])]
    for eid, version, run, launch, value in rows:
        db.store.sql("INSERT INTO derived_evidence BY NAME SELECT ? AS evidence_id, ? AS "
                     "program_version, 't-seed' AS task_id, ? AS run_id, ? AS parent_run_id, "
                     "? AS variant_version, ? AS region_id, 'matmul_kernel' AS kernel, "
                     "? AS launch, 'all' AS cta, 'all' AS sm, 'all' AS warp, "
                     "'all' AS warp_role, 'all' AS loop_iter, 'exposed_latency' AS signal, "
                     "? AS value, 'ns' AS unit, '{\"seed\": true}'::JSON AS conditions",
                     [eid, version, run, run, version, REGION, launch, value])
    yield db, str(path)
    db.close()


def _row(db: Connection, before: str, after: str) -> tuple[DiffRow, list[str]]:
    result = diff(db, REGION, f"variant={before}", f"variant={after}", ["exposed_latency"])
    (row,) = result.rows
    _, (cells,), _ = human_table(result)
    return row, cells


def test_a_sign_change_has_no_ratio_but_the_difference_with_its_unit(
        store: tuple[Connection, str]) -> None:
    db, _ = store
    row, cells = _row(db, "a", "b")
    assert row.from_median == -95.0 and row.to_median == 50.0
    assert math.isnan(row.ratio) and math.isnan(row.ci_low)
    assert row.difference == 145.0
    assert row.significant
    assert row.verdict.startswith("higher by 145 ns (the sign changed: no ratio; p=")
    # the screen: the medians with their unit, a dash for the ratio and its CI, no "-0.53"
    assert cells[1:5] == ["-95 ns", "50 ns", "–", "–"] and "-0.5" not in " ".join(cells)
    back, cells = _row(db, "b", "a")
    assert back.difference == -145.0 and back.verdict.startswith("lower by 145 ns")
    assert cells[3] == "–"


def test_a_from_median_of_zero_has_no_ratio(store: tuple[Connection, str]) -> None:
    db, _ = store
    row, cells = _row(db, "z", "b")
    assert math.isnan(row.ratio) and cells[3] == "–"
    assert row.verdict.startswith("higher by 50 ns (the from median is 0")


def test_two_negative_medians_keep_their_ratio_and_say_which_way(
        store: tuple[Connection, str]) -> None:
    """-95 ns -> -40 ns: the ratio 0.4211 says how much the magnitude shrank; the value went
    up, and the verdict says so (not "lower", as a ratio below 1 would read)."""
    db, _ = store
    row, cells = _row(db, "a", "c")
    assert round(row.ratio, 4) == round(40 / 95, 4) and cells[3] == "0.4211"
    assert row.verdict == "higher by 57.89 %"


def test_the_cli_and_json_show_no_ratio_across_the_sign_change(
        store: tuple[Connection, str]) -> None:
    db, path = store
    db.close()
    r = CliRunner().invoke(main, ["diff", path, "--region", REGION, "--from", "variant=a",
                                  "--to", "variant=b", "--signal", "exposed_latency"])
    assert r.exit_code == 0, r.output
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("exposed_latency")]
    assert "-95 ns" in line and "50 ns" in line and "higher by 145 ns" in line
    assert "-0.5" not in line and "-1." not in line
    r = CliRunner().invoke(main, ["diff", path, "--region", REGION, "--from", "variant=a",
                                  "--to", "variant=b", "--signal", "exposed_latency", "--json"])
    (row,) = json.loads(r.stdout)["rows"]
    assert row["ratio"] is None and row["ci_low"] is None and row["difference"] == 145.0


def test_a_trajectory_step_across_the_sign_change_has_no_ratio(
        store: tuple[Connection, str]) -> None:
    from argusdb.answers.trajectory import trajectory

    db, _ = store
    t = trajectory(db, [REGION], ["variant=a", "variant=b"], ["exposed_latency"])
    (series,) = t.series
    first, step = series.points
    assert first.median == -95.0
    assert step.step_ratio is None and step.ratio_to_first is None
    assert step.step_verdict is not None and step.step_verdict.startswith("higher by 145 ns")
