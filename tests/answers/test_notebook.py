"""Python and notebooks: query answers as DataFrames, answers as HTML in Jupyter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import argusdb
from argusdb.answers.diff import diff
from argusdb.answers.trajectory import trajectory
from argusdb.errors import UsageError
from tests.answers.test_h200_versions import build_store

KERNEL = "matmul/matmul_kernel"
SQL = ("SELECT launch, value FROM evidence WHERE region_id = 'matmul/matmul_kernel' AND "
       "program_version = (SELECT program_version FROM program_version "
       "WHERE options->>'config' = 'bk32_s1') ORDER BY launch")


@pytest.fixture(scope="module")
def h200(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nb") / "h200.duckdb"
    build_store(path).close()
    return path


def test_df_is_the_arrow_answer_as_pandas(h200: Path) -> None:
    with argusdb.connect(h200, read_only=True) as db:
        arrow = db.query(SQL)
        frame = db.df(SQL)
    assert list(frame.columns) == ["launch", "value"] and len(frame) == arrow.num_rows == 60
    assert frame["value"].tolist() == arrow.column("value").to_pylist()


def test_pl_is_the_arrow_answer_as_polars(h200: Path) -> None:
    polars = pytest.importorskip("polars", reason="polars comes with argusdb[dataframe]")
    with argusdb.connect(h200, read_only=True) as db:
        frame = db.pl(SQL, limit=5)
    assert isinstance(frame, polars.DataFrame) and frame.columns == ["launch", "value"]
    assert frame.height == 5


def test_a_missing_dataframe_library_is_a_clear_error(h200: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "polars", None)  # import polars raises ImportError
    with argusdb.connect(h200, read_only=True) as db, pytest.raises(UsageError,
                                                                    match=r"argusdb\[dataframe\]"):
        db.pl(SQL)


def test_answers_render_as_html_in_jupyter(h200: Path) -> None:
    with argusdb.connect(h200, read_only=True) as db:
        rep = argusdb.report(db, KERNEL, ["config=bk64_s3"])
        d = diff(db, KERNEL, "config=bk64_s3", "config=bk32_s1", ["duration"])
        t = trajectory(db, [KERNEL], ["config=bk64_s3", "config=bk32_s1", "config=bn256_s3"],
                       ["duration"])
    page = d._repr_html_()
    assert "<script" not in page and page.count("<tr>") == 2
    # bk64_s3 -> bk32_s1 is 2x slower on the H200: its verdict is red
    assert re.search(r"<td style='color:#b00'>[^<]*</td></tr></table>$", page)
    assert "text-align:right" in page
    # one style with the CLI: values carry their unit, p-values no exponent
    assert ">210.3 µs</td>" in page and "&lt; 0.0001" in page and "e-" not in page
    traj = t._repr_html_()
    # the screen view: the series with a step (3 versions each), one left out and counted
    stepped = [s for s in t.series if sum(p.median is not None for p in s.points) >= 2]
    assert traj.count("<tr>") == 1 + 3 * len(stepped) and len(stepped) >= 1
    assert len(t.series) - len(stepped) == 1 and "+ 1 more with a value in one version" in traj
    assert "color:#b00" in traj and "color:#070" in traj
    html = rep._repr_html_()
    assert "<b>matmul/matmul_kernel</b>" in html and "<td>duration</td>" in html
