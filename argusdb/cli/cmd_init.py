"""``argus init STORE``: create an empty store."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_json


@click.command("init")
@click.argument("store")
@output_options(csv=False)
@handle_errors
def command(store: str, as_json: bool) -> None:
    """Create the store file STORE (a DuckDB file) with the argusdb schema."""
    connect(store, create=True).close()
    if as_json:
        print_json({"store": store})
    else:
        click.echo(f"initialized {store}", err=True)
