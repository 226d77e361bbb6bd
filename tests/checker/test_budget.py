"""The checker's own time limit is CPU time, and every command that names ``--timeout`` has it.

A check that waits (here: a metadata query slowed down in wall time, as a loaded machine slows
it) must be answered; a check that spins its CPU past the limit must be stopped with the
time-limit error, which names an option of the command that reported it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb import connect
from argusdb.api.metadata import StoreMetadata
from argusdb.checker import analysis
from argusdb.checker.budget import CheckOverrun, cpu_budget
from argusdb.cli import main
from argusdb.errors import QueryFailed

QUESTION = ("SELECT run_id, median(value) AS m FROM evidence WHERE signal = 'duration' "
            "GROUP BY run_id")


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_budget_counts_cpu_not_waiting() -> None:
    with cpu_budget(0.3) as spent:
        time.sleep(0.6)  # wall time, no CPU
    assert spent.seconds < 0.3
    t0 = time.monotonic()
    with pytest.raises(CheckOverrun) as exc, cpu_budget(0.2):
        _spin(5.0)
    assert 0.1 <= exc.value.spent_s < 1.0 and time.monotonic() - t0 < 2.0


def test_a_check_slowed_in_wall_time_is_answered(demo_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each metadata query waits 0.4 s (a busy machine): the check takes longer than the
    1 s limit in wall time, uses little CPU, and the question is answered."""
    rows = StoreMetadata.rows

    def slow(self: StoreMetadata, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        time.sleep(0.4)
        return rows(self, *args, **kwargs)

    monkeypatch.setattr(StoreMetadata, "rows", slow)
    with connect(demo_path, read_only=True, timeout_s=1.0) as db:
        t0 = time.monotonic()
        table = db.query(QUESTION.replace("run_id, median", "run_id, max") + " UNION ALL "
                         + QUESTION + " UNION ALL " + QUESTION.replace("median", "min"))
        assert time.monotonic() - t0 > 1.0
    assert table.num_rows > 0


def test_a_check_spinning_past_the_limit_is_stopped(demo_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    run = analysis.Analyzer.run

    def spinning(self: analysis.Analyzer) -> Any:
        _spin(3.0)
        return run(self)

    monkeypatch.setattr(analysis.Analyzer, "run", spinning)
    with connect(demo_path, read_only=True, timeout_s=0.5) as db, \
            pytest.raises(QueryFailed, match=r"checking the query used more than 0\.5 s of CPU"
                          ) as exc:
        db.query(QUESTION)
    assert "--timeout" in exc.value.fix


#: Commands that ask checked questions or run library SQL under the time limit.
QUESTION_COMMANDS = ("query", "check", "explain", "diff", "report", "trajectory", "dashboard",
                     "export")


@pytest.mark.parametrize("name", QUESTION_COMMANDS)
def test_every_question_command_has_the_timeout_option(name: str) -> None:
    command = main.commands[name] if hasattr(main, "commands") else None
    assert command is not None
    assert any("--timeout" in p.opts for p in command.params), name
    r = CliRunner().invoke(main, [name, "--help"])
    assert "--timeout" in r.output


def test_diff_takes_the_timeout(demo_path: Path, ids: dict[str, str]) -> None:
    r = CliRunner().invoke(main, ["diff", str(demo_path), "--region", "softmax/softmax_fwd",
                                  "--from", ids["V1"], "--to", ids["V2"], "--signal",
                                  "duration", "--timeout", "60", "--json"])
    assert r.exit_code in (0, 1), r.output
    r = CliRunner().invoke(main, ["diff", str(demo_path), "--region", "softmax/softmax_fwd",
                                  "--from", ids["V1"], "--to", ids["V2"], "--timeout", "0"])
    assert r.exit_code == 2 and "positive, finite" in r.output
