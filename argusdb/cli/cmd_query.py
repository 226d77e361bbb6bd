"""``argus query STORE "SQL"``: answer a checked question."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_table


@click.command("query")
@click.argument("store")
@click.argument("sql")
@output_options
@handle_errors
def command(store: str, sql: str, as_json: bool, as_csv: bool) -> None:
    """Check SQL against the compatibility rules, then run it read-only over STORE.

    Exit codes: 0 answered, 1 refused by the checks, 2 usage or input error.
    """
    with connect(store) as db:
        table = db.query(sql)
    rows = [tuple(r.values()) for r in table.to_pylist()]
    print_table(table.column_names, rows, as_json, as_csv)
