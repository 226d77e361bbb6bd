"""``argus query STORE "SQL"``: answer a checked question."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_table


@click.command("query")
@click.argument("store")
@click.argument("sql")
@click.option("--timeout", "timeout_s", type=float, default=30.0, show_default=True,
              help="Stop the query after this many seconds.")
@click.option("--as-of", "as_of", metavar="SNAPSHOT|TIME",
              help="Answer as the store stood at this snapshot ('argus runs --snapshots') or "
                   "ISO time (UTC), attribution included.")
@output_options
@handle_errors
def command(store: str, sql: str, timeout_s: float, as_json: bool, as_csv: bool,
            as_of: str | None = None) -> None:
    """Check SQL against the compatibility rules, then run it read-only over STORE.

    --json adds the constructs and acknowledgements the query used. Exit codes: 0 answered,
    1 refused by the checks (each error has code, message, line, col, remedy), 2 usage or
    input error.

    Example: argus query argus.duckdb "SELECT * FROM version_diff('duration', 'A', 'B')"
    """
    with connect(store, read_only=True, timeout_s=timeout_s, as_of=as_of) as db:
        table, prov = db.query_with_provenance(sql)
    rows = [tuple(r.values()) for r in table.to_pylist()]
    extra = {k: prov[k] for k in ("constructs", "acknowledgements") if prov[k]}
    print_table(table.column_names, rows, as_json, as_csv, extra=extra)
