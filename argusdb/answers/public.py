"""``argusdb.report`` / ``argusdb.diff`` / ``argusdb.trajectory``: answers by store path or
connection.

Example:
    >>> import argusdb
    >>> argusdb.report("argus.duckdb", "softmax/softmax_fwd").to_json()["claims"][0]["verdict"]
    'sufficient'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from argusdb.answers import diff as _diff
from argusdb.answers import report as _report
from argusdb.answers import trajectory as _trajectory
from argusdb.api import Connection, connect

T = TypeVar("T")


@contextmanager
def _open(db: Connection | str | Path) -> Iterator[Connection]:
    if isinstance(db, Connection):
        yield db
        return
    with connect(db, read_only=True) as conn:
        yield conn


def _call(fn: Callable[..., T], db: Connection | str | Path, *args: Any, **kwargs: Any) -> T:
    with _open(db) as conn:
        return fn(conn, *args, **kwargs)


def report(db: Connection | str | Path, region: str, versions: list[str] | None = None,
           **kwargs: Any) -> _report.Report:
    """See :func:`argusdb.answers.report.report`."""
    return _call(_report.report, db, region, versions, **kwargs)


def diff(db: Connection | str | Path, region: str, before: str, after: str,
         signals: list[str] | None = None, **kwargs: Any) -> _diff.DiffResult:
    """See :func:`argusdb.answers.diff.diff`."""
    return _call(_diff.diff, db, region, before, after, signals, **kwargs)


def trajectory(db: Connection | str | Path, regions: list[str] | None, versions: list[str],
               signals: list[str] | None = None, **kwargs: Any) -> _trajectory.Trajectory:
    """See :func:`argusdb.answers.trajectory.trajectory`."""
    return _call(_trajectory.trajectory, db, regions, list(versions), signals, **kwargs)
