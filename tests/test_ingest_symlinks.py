"""A folder's ingest stays inside the folder: a file there that links to a file outside it is
refused (a source page two levels up was ingested, 49,920 rows), unless --follow-symlinks."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.errors import InputError
from argusdb.ingest import expand_paths
from tests.conftest import DEMO

PAGE = DEMO / "softmax" / "softmax.source.csv"
CUPTI = DEMO / "softmax" / "softmax.cupti.jsonl"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere" / "deeper"
    outside.mkdir(parents=True)
    (outside / "softmax.source.csv").write_bytes(PAGE.read_bytes())
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "softmax.cupti.jsonl").write_bytes(CUPTI.read_bytes())
    (runs / "page.csv").symlink_to(Path("..") / "elsewhere" / "deeper" / "softmax.source.csv")
    return runs


def test_a_link_out_of_the_folder_is_refused(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="a link to a file outside the folder") as err:
        expand_paths([folder])
    assert "elsewhere" not in str(err.value)   # where it points is not echoed
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "s.duckdb"), str(folder)])
    assert res.exit_code == 2 and "--follow-symlinks" in res.output, res.output
    assert not (tmp_path / "s.duckdb").exists()


def test_follow_symlinks_takes_it(folder: Path, tmp_path: Path) -> None:
    assert [p.name for p in expand_paths([folder], follow_symlinks=True)] == [
        "page.csv", "softmax.cupti.jsonl"]
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "s.duckdb"), str(folder),
                                    "--follow-symlinks"])
    assert res.exit_code == 0, res.output


def test_a_link_inside_the_folder_is_taken(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "a" / "softmax.cupti.jsonl").write_bytes(CUPTI.read_bytes())
    (runs / "same.cupti.jsonl").symlink_to(Path("a") / "softmax.cupti.jsonl")
    assert [p.name for p in expand_paths([runs])] == ["softmax.cupti.jsonl", "same.cupti.jsonl"]


def test_a_folder_link_is_not_entered(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "softmax.cupti.jsonl").write_bytes(CUPTI.read_bytes())
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "more").symlink_to(outside, target_is_directory=True)
    assert expand_paths([runs]) == []
