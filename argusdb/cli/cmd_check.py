"""``argus check STORE "SQL"``: check a question without running it."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import (
    print_json,
    sql_command,
    sql_text,
)
from argusdb.errors import QueryRefused


@sql_command("check", document=True)
def command(store: str, sql: str, timeout_s: float, as_json: bool) -> None:
    """Run the compatibility rules on SQL over STORE's metadata; do not run the query.

    Exit codes: 0 it would be answered, 1 refused (same findings as 'argus query'), 2 usage.

    Example: argus check argus.duckdb "SELECT median(value) FROM evidence"
    """
    text = sql_text(sql)
    with connect(store, read_only=True, timeout_s=timeout_s) as db:
        findings = db.check(text)
    if findings:
        raise QueryRefused(findings)
    if as_json:
        print_json({"errors": []})
    else:
        click.echo("ok: the query passes every rule", err=True)
