"""Damaged and unknown store states, and out-of-range options: an argusdb error naming the
store, what is wrong and what to do (exit 2), never a traceback.

A store of this schema is checked against ``argusdb/schema/`` when it opens: a dropped or
renamed table column (values gone) is refused; a dropped view, macro or the run sequence (code
and a counter argusdb owns) is re-created by a read-write opening, the sequence after the
highest run held.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from argusdb.api import connect
from argusdb.cli import main
from argusdb.errors import StoreError
from argusdb.store import open_store
from tests.conftest import DEMO, KERNELS

SOFTMAX = DEMO / "softmax" / "softmax.cupti.jsonl"
MATMUL = DEMO / "matmul" / "matmul.cupti.jsonl"

#: Damage -> (SQL that does it, words the refusal must hold).
REFUSED = {
    "dropped column": ("ALTER TABLE run DROP COLUMN device", "column run.device"),
    "dropped table": ("DROP TABLE kernel_launch", "table kernel_launch"),
    "renamed column": ("ALTER TABLE run RENAME COLUMN collector TO collector_x",
                       "column run.collector"),
    "dropped snapshots": ("DROP TABLE store_snapshot", "table store_snapshot"),
    "dropped store_meta": ("DROP TABLE store_meta", "no store_meta table"),
    "version abc": ("UPDATE store_meta SET value = 'abc' WHERE key = 'schema_version'",
                    "schema version in store_meta is 'abc'"),
    "version -1": ("UPDATE store_meta SET value = '-1' WHERE key = 'schema_version'",
                   "schema version in store_meta is '-1'"),
    "version 0": ("UPDATE store_meta SET value = '0' WHERE key = 'schema_version'",
                  "schema version in store_meta is '0'"),
}
#: Damages a read-write opening mends (what argusdb itself re-creates).
MENDED = {
    "dropped view": "DROP VIEW evidence",
    "dropped macro": "DROP MACRO kernel_wide",
    "dropped sequence": "DROP SEQUENCE run_seq_gen",
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("damaged") / "base.duckdb"
    with connect(db, create=True) as con:
        con.ingest(SOFTMAX, program=KERNELS / "softmax.py")
    return db


def _damaged(base: Path, tmp_path: Path, sql: str) -> Path:
    db = tmp_path / "d.duckdb"
    shutil.copy(base, db)
    con = duckdb.connect(str(db))
    con.execute(sql)
    con.close()
    return db


def _refused(res: Result, db: Path, words: str) -> None:
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    assert str(db) in res.output and words in res.output, res.output
    assert "new store" in res.output or "copy" in res.output, res.output   # what to do


@pytest.mark.parametrize("damage", list(REFUSED))
def test_a_damaged_store_is_refused_with_its_path_and_what_to_do(
        base: Path, tmp_path: Path, damage: str) -> None:
    sql, words = REFUSED[damage]
    db = _damaged(base, tmp_path, sql)
    for ro in (True, False):
        with pytest.raises(StoreError, match=words.replace("(", r"\(")):
            open_store(db, read_only=ro)
    runner = CliRunner()
    _refused(runner.invoke(main, ["runs", str(db)]), db, words)
    _refused(runner.invoke(main, ["query", str(db), "SELECT count(*) AS n FROM run"]), db, words)
    _refused(runner.invoke(main, ["ingest", str(db), str(MATMUL)]), db, words)


@pytest.mark.parametrize("damage", list(MENDED))
def test_what_argusdb_owns_is_re_created(base: Path, tmp_path: Path, damage: str) -> None:
    db = _damaged(base, tmp_path, MENDED[damage])
    res = CliRunner().invoke(main, ["ingest", str(db), str(MATMUL)])
    assert res.exit_code == 0, res.output
    with connect(db, read_only=True) as con:
        seqs = con.query("SELECT run_seq FROM run ORDER BY run_seq").column("run_seq").to_pylist()
        assert len(seqs) == 3 and len(set(seqs)) == 3   # 2 softmax runs, then matmul's
        assert con.query("SELECT count(*) AS n FROM evidence").column("n")[0].as_py() > 0


def test_a_read_only_opening_mends_through_a_short_read_write_one(base: Path,
                                                                  tmp_path: Path) -> None:
    db = _damaged(base, tmp_path, MENDED["dropped view"])
    res = CliRunner().invoke(main, ["query", str(db), "SELECT count(*) AS n FROM evidence"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("args", [
    ["query", "--timeout", "99999999999"],
    ["query", "--timeout", "1e400"],
    ["query", "--timeout", "nan"],
    ["ingest", "--lock-timeout", "nan"],
    ["ingest", "--lock-timeout", "-1"],
    ["ingest", "--lock-timeout", "1e12"],
    ["diff", "--alpha", "1.5", "--region", "r", "--from", "a", "--to", "b"],
    ["diff", "--min-effect", "inf", "--region", "r", "--from", "a", "--to", "b"],
    ["report", "--max-unattributed", "nan", "--region", "r"],
    ["report", "--max-entropy", "-1", "--region", "r"],
    ["variant-check", "--rel-err", "nan", "a", "b"],
    ["variant-check", "--tolerance", "-1", "--rel-err", "0", "a", "b"],
])
def test_every_numeric_option_is_bounded(base: Path, args: list[str]) -> None:
    cmd, *rest = args
    res = CliRunner().invoke(main, [cmd, *rest, str(base), "SELECT 1 AS x"])
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit), res.exception
    assert "Invalid value for" in res.output and args[1] in res.output, res.output
