"""Limits that count CPU seconds as well as wall seconds (argusdb.store.guard; the built-in
answers' connections): an answer slowed by a busy machine is not stopped for it; one that works
past its limit is."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from argusdb.store import guard


class _Cursor:
    def __init__(self) -> None:
        self.interrupted_at: float | None = None

    def interrupt(self) -> None:
        self.interrupted_at = self.interrupted_at or time.monotonic()


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_wall_time_alone_does_not_stop_a_question() -> None:
    dog, cur = guard.Watchdog(), _Cursor()
    with dog.limit(cur, 0.2, cpu=True):
        time.sleep(0.6)  # waiting for the CPU, as on a busy machine: no CPU used
        assert cur.interrupted_at is None
        began = time.monotonic()
        _burn(0.3)  # now it has worked past its limit
        deadline = time.monotonic() + 3.0
        while cur.interrupted_at is None and time.monotonic() < deadline:
            time.sleep(0.01)
    assert cur.interrupted_at is not None
    assert cur.interrupted_at - began < 0.3 + guard.CPU_POLL_S + 0.5


def test_the_wall_backstop_stops_a_question_that_waits(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setattr(guard, "WALL_BACKSTOP", 3.0)
    dog, cur = guard.Watchdog(), _Cursor()
    began = time.monotonic()
    with dog.limit(cur, 0.1, cpu=True):
        while cur.interrupted_at is None and time.monotonic() < began + 3.0:
            time.sleep(0.01)
    assert cur.interrupted_at is not None
    assert 0.3 <= cur.interrupted_at - began < 0.3 + guard.CPU_POLL_S + 0.5


def test_spent_is_the_lesser_of_wall_and_cpu() -> None:
    wall0, cpu0 = time.monotonic(), time.process_time()
    time.sleep(0.2)
    assert guard.spent_s(wall0, cpu0) < 0.1
    _burn(0.2)
    assert 0.2 <= guard.spent_s(wall0, cpu0) <= time.monotonic() - wall0


def test_other_limits_count_wall_seconds() -> None:
    dog, cur = guard.Watchdog(), _Cursor()
    with dog.limit(cur, 0.1):
        time.sleep(0.8)  # no CPU used: a wall limit stops it all the same (cpu=True: not)
    assert cur.interrupted_at is not None


def test_a_connection_says_which_limits_count_cpu(tmp_path: Path) -> None:
    from argusdb.api import connect
    from argusdb.store.guard import Guarded

    path = tmp_path / "t.duckdb"
    connect(path, create=True).close()
    with connect(path, read_only=True, cpu_time=True) as db:
        assert db.store.count_cpu
        assert Guarded(db.store, None, "SELECT 1", 1.0, lambda c: c, None, own=True).cpu
    with connect(path, read_only=True) as db:
        assert not Guarded(db.store, None, "SELECT 1", 1.0, lambda c: c, None, own=True).cpu


def test_a_connection_counts_cpu_for_the_calls_that_set_it(tmp_path: Path) -> None:
    # the MCP worker's one connection: built-in answers count CPU, a user's SQL wall seconds
    from argusdb.agent.worker import BUILT_IN
    from argusdb.api import connect
    from argusdb.store.guard import Guarded

    assert BUILT_IN == {"report", "diff", "trajectory"}
    path = tmp_path / "t.duckdb"
    connect(path, create=True).close()
    with connect(path, read_only=True) as db:
        for on in (True, False, True):
            db.cpu_time = on
            assert db.cpu_time is on and db.store.count_cpu is on
            assert Guarded(db.store, None, "SELECT 1", 1.0, lambda c: c, None,
                           own=True).cpu is on


def test_a_cpu_deadline_is_not_passed_by_waiting() -> None:
    # the whole-call deadline of a built-in answer (guard.deadline(cpu=True)): waiting for
    # the CPU is not working past it
    ran: list[str] = []
    previous = guard.set_overrun_handler(lambda: ran.append("overrun"))
    try:
        with guard.deadline(0.1, cpu=True):
            time.sleep(0.3 + guard.Watchdog.GRACE_S)
    finally:
        guard.set_overrun_handler(previous)
    assert ran == []
