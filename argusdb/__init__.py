"""argusdb: an evidence database with a checked query language for GPU performance measurement.

Example:
    >>> import argusdb
    >>> db = argusdb.connect("argus.duckdb", read_only=True)
    >>> t = db.query("SELECT signal, count(*) AS n FROM evidence GROUP BY signal")
    >>> "duration" in t.column("signal").to_pylist()
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from argusdb.answers.public import diff, report, trajectory
    from argusdb.api import Connection, connect

__all__ = ["Connection", "connect", "diff", "report", "trajectory"]
_ANSWERS = ("diff", "report", "trajectory")
__version__ = "0.1.0"

# Eager but light (the planner and the store load when observe is called). Binding the function
# after the submodule import keeps ``argusdb.observe`` the function, not the module.
from argusdb.observe import observe  # noqa: E402

__all__ += ["observe"]


def __getattr__(name: str) -> Any:
    # Lazy, so that collectors can import argusdb.errors without importing the store.
    if name in ("Connection", "connect"):
        from argusdb import api

        return getattr(api, name)
    if name in _ANSWERS:
        from argusdb.answers import public

        return getattr(public, name)
    raise AttributeError(name)
