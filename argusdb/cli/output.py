"""Shared output options and the one error envelope of the CLI (as sqlite-utils does).

Data goes to stdout, diagnostics to stderr. ``--json`` prints the same content as a stable
envelope: ``{"ok": false, "errors": [{"code": ..., "message": ...}]}`` on error.
"""

from __future__ import annotations

import csv
import functools
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from argusdb.errors import ArgusError

F = TypeVar("F", bound=Callable[..., Any])


def output_options(func: F) -> F:
    """Add ``--json`` and ``--csv`` to a command."""
    func = click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")(func)
    func = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)
    return func


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
