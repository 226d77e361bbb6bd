"""Shared output options and the one error envelope of the CLI (as sqlite-utils does).

Data goes to stdout, diagnostics to stderr. ``--json`` prints the same content as a stable
envelope: ``{"ok": false, "errors": [{"code": ..., "message": ...}]}`` on error.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from argusdb.api import (
    cap_process_memory,
    deadline,
    set_overrun_handler,
    valid_sql,
    valid_timeout,
)
from argusdb.errors import ArgusError, QueryFailed, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def output_options(func: F) -> F:
    """Add ``--json`` and ``--csv`` to a command."""
    func = click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")(func)
    func = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)
    return func


#: Address space of a CLI process that answers a question (see ``cap_process_memory``).
QUESTION_MEMORY = 8 * 2**30

#: Context settings of commands that take SQL: a query may start with ``--`` (a comment), so
#: an unknown ``--word`` is an argument, not an option error. ``argus query STORE -- SQL``
#: (click's end of options) and ``-`` (read the query from stdin) work too.
SQL_COMMAND = {"ignore_unknown_options": True}


class Seconds(click.ParamType):
    """A time limit: a positive finite number of seconds (``nan``, ``inf``, ``0`` refused)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            return valid_timeout(value, param.opts[0] if param and param.opts else "timeout")
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


def sql_text(sql: str) -> str:
    """The query of a command: the argument, or stdin when it is ``-``; valid UTF-8 only.

    The process then answers a user's question: its memory is capped (QUESTION_MEMORY).
    """
    cap_process_memory(QUESTION_MEMORY)
    if sql == "-":
        data = sys.stdin.buffer.read()
        try:
            sql = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"the query on stdin is not valid UTF-8 (byte {exc.start + 1}); "
                             f"write it in UTF-8") from None
    return valid_sql(sql)


@contextmanager
def hard_time_limit(timeout_s: float, as_json: bool = False) -> Iterator[None]:
    """End this process with the time-limit error when the command runs past ``timeout_s``
    and the watchdog's grace (a single DuckDB operator checks for interrupts only between
    vectors; the checker's Python has none): the CLI answers one question, read-only, so
    nothing is lost, and no question outlives ``--timeout`` by more than a second."""
    exc = QueryFailed(f"the query ran longer than {timeout_s:g} s and was stopped",
                      "narrow it (filter by region, run or signal) or raise the time limit "
                      "(--timeout)")

    def stop() -> None:
        if as_json:
            sys.stdout.write(json.dumps({"ok": False, "errors": [exc.to_json()]}) + "\n")
        else:
            sys.stderr.write(f"error: {exc}\n")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exc.exit_code)

    previous = set_overrun_handler(stop)
    try:
        with deadline(timeout_s):  # the whole command: open, check, run, print
            yield
    finally:
        set_overrun_handler(previous)


def handle_errors(func: F) -> F:
    """Turn ArgusError into a message (stderr, or a JSON envelope) and its exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ArgusError as exc:
            if kwargs.get("as_json"):
                click.echo(json.dumps({"ok": False, "errors": _errors(exc)}, default=str))
            else:
                click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def _errors(exc: ArgusError) -> list[dict[str, Any]]:
    findings = getattr(exc, "findings", None)
    if findings:
        return [f.to_json() for f in findings]
    return [exc.to_json()]


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], as_json: bool = False,
                as_csv: bool = False, extra: dict[str, Any] | None = None) -> None:
    """Print rows as JSON (``{"ok", "columns", "rows"}``), CSV or an aligned text table."""
    if as_json:
        doc: dict[str, Any] = {"ok": True, "columns": list(columns),
                               "rows": [list(r) for r in rows]}
        doc.update(extra or {})
        click.echo(json.dumps(doc, default=str))
        return
    if as_csv:
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        w.writerows(rows)
        return
    cells = [[_fmt(v) for v in r] for r in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _fmt(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
