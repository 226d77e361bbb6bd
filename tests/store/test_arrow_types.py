"""A question whose answer has a column type Arrow has no form of (``get_type(...)`` is TYPE,
``variant_normalize(...)`` VARIANT) is an argusdb error with the fix, not DuckDB's
``OSError: Unsupported Arrow type`` from the hand-over."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.api import connect
from argusdb.cli import main
from argusdb.errors import QueryFailed

QUESTIONS = ["SELECT get_type(run_seq) AS t FROM run",
             "SELECT variant_normalize(1::VARIANT) AS v",
             "SELECT 1::VARIANT AS v"]


@pytest.mark.parametrize("sql", QUESTIONS)
def test_an_answer_arrow_cannot_carry_is_an_argusdb_error(softmax_db: Path, sql: str) -> None:
    with connect(softmax_db, read_only=True) as con:
        with pytest.raises(QueryFailed, match=r"cannot be handed over.*Unsupported Arrow type"
                           ) as err:
            con.query(sql)
        assert "CAST(... AS VARCHAR)" in str(err.value)
        assert con.query("SELECT CAST(get_type(run_seq) AS VARCHAR) AS t FROM run LIMIT 1"
                         ).to_pylist() == [{"t": "BIGINT"}]
    # The CLI prints rows without Arrow: it answers, or refuses with an argusdb error (exit 2)
    # naming DuckDB's reason; never a traceback.
    res = CliRunner().invoke(main, ["query", str(softmax_db), sql])
    assert res.exit_code in (0, 2) and isinstance(res.exception, SystemExit | None), res.output
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        assert "Unsupported" in res.output and "fix:" in res.output
