"""The read-only sandbox: known escapes are refused, hostile input never crashes or writes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from argusdb.api import checked, connect
from argusdb.errors import ArgusError, QueryFailed, QueryRefused
from argusdb.store import open_store
from argusdb.store.embedded import Store

ESCAPES = yaml.safe_load((Path(__file__).parent / "escapes.yaml").read_text())


@pytest.mark.parametrize("case", ESCAPES, ids=[c["sql"][:40] for c in ESCAPES])
def test_escape_is_refused_with_a_clear_reason(case: dict[str, Any]) -> None:
    findings = checked.check(case["sql"])
    assert findings, case
    assert findings[0].code == case["code"], [str(f) for f in findings]
    assert findings[0].message and findings[0].remedy


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT content FROM read_text('/etc/passwd')",
    "COPY (SELECT 1) TO '/tmp/argus-escape.csv'",
    "ATTACH '/tmp/argus-escape.duckdb' AS o",
    "SET enable_external_access = true",
    "INSTALL httpfs",
])
def test_locked_connection_is_a_second_layer(tmp_path: Path, sql: str) -> None:
    """Bypass the checker: the engine itself refuses (defence in depth)."""
    with open_store(tmp_path / "s.duckdb", create=True) as st:
        st.lock_down()
        cur = st.cursor()
        with pytest.raises(Exception) as err:
            cur.execute(sql).fetchall()
        assert "Traceback" not in str(err.value)
        with pytest.raises(QueryFailed):
            st.run_select(sql, 5.0)
    assert not Path("/tmp/argus-escape.csv").exists()
    assert not Path("/tmp/argus-escape.duckdb").exists()


@pytest.mark.parametrize("sql", ["CREATE TABLE stolen AS SELECT 1", "SELECT 1; DROP TABLE run",
                                 "DELETE FROM run"])
def test_engine_layer_runs_only_one_select(tmp_path: Path, sql: str) -> None:
    """DuckDB's own parser must see exactly one SELECT, else nothing runs."""
    with open_store(tmp_path / "s.duckdb", create=True) as st:
        with pytest.raises(QueryFailed, match="other than one SELECT"):
            st.run_select(sql, 5.0)
        assert st.has_table("run") and not st.has_table("stolen")


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_hostile_queries_write_nothing(demo_path: Path, tmp_path: Path) -> None:
    store = tmp_path / "copy.duckdb"
    store.write_bytes(demo_path.read_bytes())
    before = _digest(store)
    with connect(store, read_only=True) as db:
        counts = db.store.rows("SELECT (SELECT count(*) FROM observed_evidence) AS e, "
                               "(SELECT count(*) FROM run) AS r")
        for case in ESCAPES:
            with pytest.raises(QueryRefused):
                db.query(case["sql"])
        with pytest.raises(QueryFailed):  # runs, then hits the time limit
            db.timeout_s = 0.5
            db.query("SELECT count(*) FROM range(100000000000) a")
        assert db.store.rows("SELECT (SELECT count(*) FROM observed_evidence) AS e, "
                             "(SELECT count(*) FROM run) AS r") == counts
    assert _digest(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.duckdb"]


def test_hostile_queries_on_a_read_write_connection_change_no_rows(tmp_path: Path,
                                                                   demo_path: Path) -> None:
    store = tmp_path / "rw.duckdb"
    store.write_bytes(demo_path.read_bytes())
    with connect(store) as db:
        count = db.store.rows("SELECT count(*) AS n FROM observed_evidence")
        for case in ESCAPES:
            with pytest.raises(ArgusError):
                db.query(case["sql"])
        assert db.store.rows("SELECT count(*) AS n FROM observed_evidence") == count


@pytest.mark.parametrize("sql", ["", "   ", "SELECT", "SELECT 'unterminated", "((((((",
                                 "SELECT * FROM", "\x00\x01\x02", "SELECT 1 +", "; ; ;",
                                 "SELECT " + "(" * 5000 + "1" + ")" * 5000,
                                 "SELECT * FROM evidence WHERE signal = 1",
                                 "x" * 200_000])
def test_malformed_input_is_a_finding_never_an_exception(sql: str, demo_store: Store) -> None:
    findings = checked.check(sql, demo_store)
    assert findings and all(f.code.startswith("AR") for f in findings)


def test_statements_run_side_by_side_each_under_the_sandbox(tmp_path: Path) -> None:
    """stream_selects runs each statement on a cursor and in a thread of its own: two
    fetches that each wait for the other finish only when both run at once."""
    import threading

    with open_store(tmp_path / "s.duckdb", create=True) as st:
        both = threading.Barrier(2)

        def meet(cur: Any) -> tuple[Any, set[str]]:
            both.wait(timeout=30)  # raises BrokenBarrierError if the other does not run
            return cur.fetchall(), {threading.current_thread().name}

        running = [st._start(sql, 60.0, meet) for sql in ("SELECT 1 AS a", "SELECT 2 AS b")]
        (rows_a, _), (rows_b, _) = [g.result() for g in running]
        assert (rows_a, rows_b) == ([(1,)], [(2,)])
        # the same answers as one by one, in the order asked, with DuckDB's parser's check
        asked = ["SELECT run_id FROM run", "SELECT 42 AS n", "SELECT 'x' AS s"]
        together = st.stream_selects(asked, 5.0)
        assert [t.to_pylist() for t, _ in together] == [
            st.stream_select(sql, 5.0)[0].to_pylist() for sql in asked]
        with pytest.raises(QueryFailed, match="other than one SELECT"):
            st.stream_selects(["SELECT 1", "DELETE FROM run"], 5.0)
        # one fails: the error is raised once every statement has finished, none is left
        before = threading.active_count()
        with pytest.raises(QueryFailed, match="boom"):
            st.stream_selects(["SELECT error('boom')", "SELECT count(*) FROM range(1000)"], 5.0)
        assert threading.active_count() <= before
        assert st.has_table("run")


def test_a_question_asked_again_runs_from_its_kept_plan(tmp_path: Path) -> None:
    """A statement that ran once in a store write generation is prepared when asked again
    and its cursor kept with the plan; a write drops every kept plan (DuckDB plans from the
    data's statistics: the kept plan of a filter the statistics rule out answers nothing)."""
    with open_store(tmp_path / "s.duckdb", create=True) as st:
        st.sql("CREATE TABLE t AS SELECT range AS x FROM range(10)")
        sql = "SELECT count(*) AS n FROM t WHERE x > 100"
        kept = st._kept
        assert st.stream_select(sql, 5.0)[0].to_pylist() == [{"n": 0}]
        assert kept._idle == {} and sql in kept._ran  # ran once: nothing prepared yet
        for _ in range(3):  # prepared on the second ask, then executed from the kept cursor
            assert st.stream_select(sql, 5.0)[0].to_pylist() == [{"n": 0}]
            assert list(kept._idle) == [sql]
        held = kept._idle[sql]
        assert held.execute("SELECT name FROM duckdb_prepared_statements()").fetchall() == [
            ("_argus_kept",)]
        st.sql("INSERT INTO t VALUES (1000)")  # a write: a new generation, nothing kept
        assert st.stream_select(sql, 5.0)[0].to_pylist() == [{"n": 1}]
        assert kept._idle == {} and list(kept._ran) == [sql]
        with pytest.raises(Exception, match="closed"):
            held.execute("SELECT 1")
        # a failing statement keeps nothing, and fails as it did the first time
        for _ in range(2):
            with pytest.raises(QueryFailed, match="boom"):
                st.stream_select("SELECT error('boom') AS e", 5.0)
        assert list(kept._ran) == [sql]
        # questions asked side by side: each from a cursor of its own
        for _ in range(3):
            assert [t.to_pylist() for t, _ in st.stream_selects([sql, "SELECT 2 AS b"], 5.0)
                    ] == [[{"n": 1}], [{"b": 2}]]
        assert set(kept._idle) == {sql, "SELECT 2 AS b"}
    assert kept._idle == {}  # closed with the store


def test_a_quick_kept_question_alone_runs_on_the_callers_thread(tmp_path: Path) -> None:
    """A question alone whose kept plan ran quickly runs without a worker thread; side by
    side, or before its plan is kept, each question has a thread of its own."""
    with open_store(tmp_path / "s.duckdb", create=True) as st:
        sql = "SELECT count(*) AS n FROM range(1000)"
        real, started = st._start, []

        def counted(q: str, *args: Any, **kw: Any) -> Any:
            started.append(q)
            return real(q, *args, **kw)

        st._start = counted  # type: ignore[method-assign]
        for _ in range(3):
            assert st.stream_select(sql, 5.0)[0].to_pylist() == [{"n": 1000}]
        assert started == [sql, sql]  # asked once, then prepared: each in a worker thread
        assert st._kept.quick(st.generation, sql, 5.0)
        assert not st._kept.quick(st.generation, sql, 0.001)  # not within a tenth of it
        assert st.stream_selects([sql, "SELECT 1 AS a"], 5.0)[1][0].to_pylist() == [{"a": 1}]
        assert started == [sql, sql, sql, "SELECT 1 AS a"]  # side by side: threads
        for n in range(20):  # more texts than the most recent kept: the plan still idle
            st.stream_select(f"SELECT {n} AS n", 5.0)
        assert sql in st._kept._idle and sql not in st._kept._ran
        assert not st._kept.quick(st.generation, sql, 5.0)  # how long it took is forgotten
        assert st.stream_select(sql, 5.0)[0].to_pylist() == [{"n": 1000}]
        assert st._kept.quick(st.generation, sql, 5.0)


def test_only_a_nearer_deadline_wakes_the_watchdog() -> None:
    """The watchdog sleeps towards its nearest deadline (also one whose question has
    finished); a later deadline leaves it asleep, a nearer one wakes it and is kept."""
    import threading
    import time

    from argusdb.store.guard import Watchdog as _Watchdog

    class Cursor:
        def __init__(self) -> None:
            self.stopped = threading.Event()

        def interrupt(self) -> None:
            self.stopped.set()

    dog = _Watchdog()
    with dog.limit(Cursor(), 60.0):
        pass  # finished: the thread still sleeps towards its deadline
    for _ in range(500):  # until the thread sleeps
        with dog._cond:
            if 0 < dog._until < float("inf"):
                break
        time.sleep(0.01)
    until = dog._until
    later = Cursor()
    with dog.limit(later, 120.0):
        assert dog._until == until  # not woken
    near = Cursor()
    with dog.limit(near, 0.05):
        assert near.stopped.wait(10)  # woken, and interrupted it at its deadline
    assert not later.stopped.is_set()
