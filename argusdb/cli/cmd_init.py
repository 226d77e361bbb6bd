"""``argus init STORE``: create an empty store."""

from __future__ import annotations

import click

from argusdb.cli.output import handle_errors
from argusdb.store import Store


@click.command("init")
@click.argument("store")
@handle_errors
def command(store: str) -> None:
    """Create the store file STORE (a DuckDB file) with the argusdb schema."""
    Store.open(store, create=True).close()
    click.echo(f"initialized {store}", err=True)
