"""Shared output options and the one error envelope of the CLI (as sqlite-utils does).

Data goes to stdout, diagnostics to stderr. Every data command takes :func:`output_options`
(``--json``, and ``--csv`` where it prints a table); ``--json`` prints one JSON document, the
one envelope: ``{"ok": true, ...}`` on success (:func:`print_json`, :func:`print_table`) and
``{"ok": false, "errors": [{"code": ..., "message": ...}]}`` on error (:func:`handle_errors`).
"""

from __future__ import annotations

import csv
import functools
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from argusdb.answers import format as fmt
from argusdb.answers.format import cell, is_number
from argusdb.answers.wire import dumps
from argusdb.api import (
    cap_process_memory,
    set_overrun_handler,
    valid_sql,
    valid_timeout,
)
from argusdb.errors import ArgusError, QueryFailed, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def output_options(func: F | None = None, *, csv: bool = True) -> Any:
    """Add ``--json`` (parameter ``as_json``) and, with ``csv``, ``--csv`` (``as_csv``) to a
    command: ``@output_options`` for a command that prints a table, ``@output_options(csv=False)``
    for one that prints a document. Put it above :func:`handle_errors`."""

    def add(f: F) -> F:
        if csv:
            f = click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")(f)
        return click.option("--json", "as_json", is_flag=True,
                            help='Print one JSON document: {"ok": true, ...}, or '
                                 '{"ok": false, "errors": [...]}.')(f)

    return add if func is None else add(func)


def print_json(doc: dict[str, Any]) -> None:
    """Print ``doc`` in the success envelope: ``{"ok": true, ...doc}`` (a ``doc`` that says
    ``"ok": false`` itself, e.g. a refused explanation, keeps it)."""
    click.echo(dumps({"ok": True, **doc}, default=str))


#: Address space of a CLI process that answers a question (see ``cap_process_memory``).
QUESTION_MEMORY = 8 * 2**30

#: Context settings of commands that take SQL: a query may start with ``--`` (a comment), so
#: an unknown ``--word`` is an argument, not an option error. ``argus query STORE -- SQL``
#: (click's end of options) and ``-`` (read the query from stdin) work too.
SQL_COMMAND = {"ignore_unknown_options": True}


def sql_command(name: str, document: bool = False) -> Callable[[F], click.Command]:
    """A command ``argus NAME STORE SQL`` (:data:`SQL_COMMAND`'s settings): the STORE and SQL
    arguments of ``check``, ``explain`` and ``query``; the options go below it. With
    ``document`` it also takes ``--timeout`` and ``--json``, prints one document and handles
    errors (``check``, ``explain``)."""

    def make(f: F) -> click.Command:
        if document:
            f = timeout_option(output_options(csv=False)(handle_errors(f)))
        f = click.argument("store")(click.argument("sql")(f))
        return click.command(name, context_settings=SQL_COMMAND)(f)

    return make


class Seconds(click.ParamType):
    """A time limit: a positive finite number of seconds (``nan``, ``inf``, ``0`` refused)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            return valid_timeout(value, param.opts[0] if param and param.opts else "timeout")
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


class Number(click.ParamType):
    """A finite number within bounds (``nan``, ``inf`` and values outside refused, with the
    range in the message): every numeric option of the CLI that is not a time limit.

    Example:
        >>> Number(0, 1, min_open=True).convert("0.05", None, None)
        0.05
    """

    name = "number"

    def __init__(self, low: float | None = None, high: float | None = None,
                 min_open: bool = False, max_open: bool = False) -> None:
        self.low, self.high, self.min_open, self.max_open = low, high, min_open, max_open

    def _range(self) -> str:
        lo = "" if self.low is None else f"{self.low:g} {'<' if self.min_open else '<='} "
        hi = "" if self.high is None else f" {'<' if self.max_open else '<='} {self.high:g}"
        return f"{lo}x{hi}"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            x = math.nan
        bad = not math.isfinite(x) or (
            self.low is not None and (x <= self.low if self.min_open else x < self.low)) or (
            self.high is not None and (x >= self.high if self.max_open else x > self.high))
        if bad:
            self.fail(f"{value!r} is not a finite number with {self._range()}", param, ctx)
        return x


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


def timeout_option(func: F) -> F:
    """The ``--timeout`` option (``timeout_s``) of a command that asks checked questions."""
    return click.option("--timeout", "timeout_s", type=Seconds(), default=30.0,
                        show_default=True,
                        help="Time limit, seconds: of each question's run (wall time) and of "
                             "its check (CPU time).")(func)


@contextmanager
def hard_time_limit(timeout_s: float, as_json: bool = False) -> Iterator[None]:
    """End this process with the time-limit error when a statement runs past its limit and
    the watchdog's grace (a single DuckDB operator checks for interrupts only between
    vectors): the CLI answers one question, read-only, so nothing is lost, and no run outlives
    ``--timeout`` by more than a second. The check is bounded in CPU seconds instead
    (:mod:`argusdb.checker.budget`), so that a busy machine does not refuse it: there is no
    wall-time deadline over the whole command, only over each statement it runs (opening
    waits for a lock at most ARGUS_LOCK_TIMEOUT)."""
    exc = QueryFailed(f"the query ran longer than {timeout_s:g} s and was stopped",
                      "narrow it (filter by region, run or signal) or raise the time limit "
                      "(--timeout)")

    def stop() -> None:
        if as_json:
            sys.stdout.write(dumps({"ok": False, "errors": [exc.to_json()]}) + "\n")
        else:
            sys.stderr.write(f"error: {exc}\n")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exc.exit_code)

    previous = set_overrun_handler(stop)
    try:
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
                click.echo(dumps({"ok": False, "errors": _errors(exc)}, default=str))
            else:
                click.echo(f"error: {_readable(exc)}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def _readable(exc: ArgusError) -> str:
    """An error for a person: the cause on the first line, each fix or request on its own
    (the JSON envelope keeps them as fields)."""
    from argusdb.errors import InputError, NoEvidence

    if isinstance(exc, InputError):
        return f"{exc.path}: {exc.problem}\n  fix: {exc.fix}"
    if isinstance(exc, QueryFailed) or (isinstance(exc, UsageError) and exc.fix):
        return f"{exc.problem}\n  fix: {exc.fix}"
    if isinstance(exc, NoEvidence):
        return "\n".join([f"no evidence: {exc.missing}",
                          *(f"  to produce it: {r}" for r in exc.requests)])
    return str(exc)


def check_output_path(path: str, *, folder: bool = False) -> None:
    """Refuse an output path that cannot be written, before any work is done.

    Args:
        path: the file (or, with ``folder``, the directory) a command will write.
        folder: the path names a directory that is created when missing.

    Raises:
        UsageError: the parent folder is missing, or a file stands where a folder must go
            (or a folder where a file must go).
    """
    from pathlib import Path

    p = Path(path)
    if folder:
        if p.exists() and not p.is_dir():
            raise UsageError(f"{path}: is a file, and --out names the folder to write into",
                             "pass a folder path (it is created when missing)")
        return
    if p.is_dir():
        raise UsageError(f"{path}: is a folder", "pass the path of the file to write")
    if not p.parent.is_dir():
        raise UsageError(f"{path}: the folder {p.parent} does not exist",
                         "create it first or pass a path in an existing folder")


def _errors(exc: ArgusError) -> list[dict[str, Any]]:
    findings = getattr(exc, "findings", None)
    if findings:
        return [f.to_json() for f in findings]
    return [exc.to_json()]


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], as_json: bool = False,
                as_csv: bool = False, extra: dict[str, Any] | None = None,
                right: Sequence[bool] | None = None) -> None:
    """Print rows as JSON (``{"ok", "columns", "rows"}``), CSV or an aligned text table
    (``right``: which columns to right-align, for cells already formatted as text)."""
    if as_json:
        doc: dict[str, Any] = {"ok": True, "columns": list(columns),
                               "rows": [list(r) for r in rows]}
        doc.update(extra or {})
        click.echo(dumps(doc, default=str))
        return
    if as_csv:
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        w.writerows(rows)
        return
    print_text_table(columns, rows, right)


def print_step_diff(rows: Sequence[dict[str, Any]]) -> None:
    """The per-step and per-collective rows of a launch diff as a text table (``argus diff``
    and ``argus launch diff``): medians with units, ratio to/from, its 95% CI and p-value."""
    print_table(
        ["quantity", "key", "n from/to", "from", "to", "ratio", "95% CI", "p", "significant"],
        [[r["quantity"], r["key"], f"{r['from_n']}/{r['to_n']}",
          fmt.quantity(r["from_median_ns"], "ns"), fmt.quantity(r["to_median_ns"], "ns"),
          fmt.ratio(r["ratio"]), fmt.interval(r["ci_low"], r["ci_high"]),
          fmt.p_value(r["p_value"]), fmt.text(r["significant"])] for r in rows],
        right=[False, False, True, True, True, True, True, True, False])


def print_text_table(columns: Sequence[str], rows: Sequence[Sequence[Any]],
                     right: Sequence[bool] | None = None) -> None:
    """An aligned table for people: numbers right-aligned and formatted by
    :func:`argusdb.answers.format.cell` (thousands separators, no exponent notation, NULL
    spelled out), never wrapped or cut (pipe it to ``less -S``).

    Plain printable ASCII, which is what answers hold, is laid out directly (:func:`_plain`),
    exactly as ``rich`` lays it out: rich costs 0.45 ms a row and 30 ms of start-up. Other text
    (wide or control characters) goes through rich (:func:`_rich`)."""
    cells = [[cell(v) for v in r] for r in rows]
    numeric = list(right) if right is not None else [
        bool(rows) and all(is_number(r[i]) or r[i] is None for r in rows)
        for i in range(len(columns))]
    plain = _plain_fits(list(columns), cells, numeric)
    click.echo((_plain if plain else _rich)(list(columns), cells, numeric))


def _plain_fits(columns: list[str], cells: list[list[str]], numeric: list[bool]) -> bool:
    """Whether :func:`_plain` lays the table out as rich would: printable ASCII only, and no
    blanks at the ends of a right-aligned column's text (rich trims those)."""
    for line in (columns, *cells):
        for c, num in zip(line, numeric, strict=True):
            if not (c.isascii() and c.isprintable()) or (num and c != c.strip()):
                return False
    return True


def _plain(columns: list[str], cells: list[list[str]], numeric: list[bool]) -> str:
    """Two spaces between columns, numeric columns right-aligned, trailing blanks cut."""
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    return "\n".join("  ".join(c.rjust(w) if num else c.ljust(w)
                               for c, w, num in zip(line, widths, numeric, strict=True)).rstrip()
                     for line in [columns, *cells])


def _rich(columns: list[str], cells: list[list[str]], numeric: list[bool]) -> str:
    """The same layout by ``rich`` (cell widths of wide characters, control characters)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold",
                  padding=(0, 1, 0, 1))
    for name, num in zip(columns, numeric, strict=True):
        table.add_column(Text(name), justify="right" if num else "left", no_wrap=True)
    for r in cells:
        table.add_row(*(Text(c) for c in r))  # cells are data, never markup
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    console = Console(width=max(80, sum(widths) + 2 * len(widths) + 2), highlight=False,
                      soft_wrap=False, force_terminal=False, color_system=None)
    with console.capture() as cap:
        console.print(table)
    return "\n".join(line.rstrip() for line in cap.get().splitlines())
