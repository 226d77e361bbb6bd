"""Accepted checks kept between processes (argusdb.api.kept): found again only for the same
text, code and store file; never for refusals; never from a folder others may write."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from argusdb.api import connect, kept
from argusdb.errors import QueryRefused

SQL = ("SELECT region_id, count(*) AS n FROM evidence WHERE signal = 'duration' "
       "AND region_id IS NOT NULL GROUP BY region_id, program_version ORDER BY region_id, n")


@pytest.fixture
def demo(tmp_path: Path, _example_store: Path) -> Path:
    path = tmp_path / "argus.duckdb"
    shutil.copy(_example_store, path)
    return path


def _entries() -> list[Path]:
    folder = kept.cache_dir()
    assert folder is not None
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_second_connection_runs_the_kept_check(demo: Path) -> None:
    with connect(demo, read_only=True) as db:
        first, prov = db.query_rows(SQL)
        assert not isinstance(db._checked(SQL, across=True), kept.KeptCheck)
    assert len(_entries()) == 1
    with connect(demo, read_only=True) as db:
        report = db._checked(SQL, across=True)
        assert isinstance(report, kept.KeptCheck)
        again, prov_again = db.query_rows(SQL)
        assert again == first and prov_again == prov
        # the table answer is the same rows
        assert [tuple(r.values()) for r in db.query(SQL).to_pylist()] == first.rows
        # check and explain always analyse
        assert db.check(SQL) == []
        assert db.explain(SQL)["executed_sql"] == prov["executed_sql"]


def test_a_write_to_the_store_misses_the_kept_check(demo: Path) -> None:
    with connect(demo, read_only=True) as db:
        db.query_rows(SQL)
    before = kept.store_identity(str(demo))
    with connect(demo) as db:  # a writer: its statements change the file or its log
        db.store.sql("CREATE TABLE scratch AS SELECT 1 AS x")
        db.store.sql("DROP TABLE scratch")
    assert kept.store_identity(str(demo)) != before
    with connect(demo, read_only=True) as db:
        assert not isinstance(db._checked(SQL, across=True), kept.KeptCheck)
    assert len(_entries()) == 2


def test_other_text_and_refusals_are_judged_afresh(demo: Path) -> None:
    refused = "SELECT median(value) FROM evidence"
    with connect(demo, read_only=True) as db:
        db.query_rows(SQL)
        with pytest.raises(QueryRefused):
            db.query_rows(refused)
    assert len(_entries()) == 1
    with connect(demo, read_only=True) as db:
        with pytest.raises(QueryRefused):
            db.query_rows(refused)
        assert not isinstance(db._checked(SQL + " ", across=True), kept.KeptCheck)


def test_a_changed_checker_misses(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(demo, read_only=True) as db:
        db.query_rows(SQL)
    monkeypatch.setattr(kept, "code_fingerprint", lambda: "another release")
    with connect(demo, read_only=True) as db:
        assert not isinstance(db._checked(SQL, across=True), kept.KeptCheck)


def test_a_tampered_entry_is_not_used(demo: Path) -> None:
    with connect(demo, read_only=True) as db:
        db.query_rows(SQL)
    (entry,) = _entries()
    entry.write_text("{not json", encoding="utf-8")
    with connect(demo, read_only=True) as db:
        assert not isinstance(db._checked(SQL, across=True), kept.KeptCheck)


def test_cache_off_and_unsafe_folders(demo: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kept.CACHE_ENV, "off")
    assert kept.cache_dir() is None
    with connect(demo, read_only=True) as db:
        db.query_rows(SQL)
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv(kept.CACHE_ENV, str(shared))
    with connect(demo, read_only=True) as db:
        db.query_rows(SQL)
    assert list(shared.iterdir()) == []  # others may write it: not used


def test_writable_connections_keep_nothing(demo: Path) -> None:
    with connect(demo) as db:
        db.query_with_provenance(SQL)
    assert _entries() == []


def test_prune_keeps_the_folder_bounded(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "MAX_ENTRIES", 4)
    ident = kept.store_identity(str(demo))
    assert ident is not None
    for i in range(6):
        assert kept.save(ident, f"SELECT {i}", f"SELECT {i}", {})
    assert len(_entries()) <= 4
    assert kept.load(ident, "SELECT 5") is not None
