"""``argus copy SRC DST``: copy a store into a new one of either kind (file or shared URI)."""

from __future__ import annotations

import click

from argusdb.api.surface import copy_store
from argusdb.cli.output import handle_errors, output_options, print_json


@click.command("copy")
@click.argument("src")
@click.argument("dst")
@output_options(csv=False)
@handle_errors
def command(src: str, dst: str, as_json: bool) -> None:
    """Copy every table of store SRC into DST, a new store (embedded file or ducklake: URI).

    Example: argus copy argus.duckdb 'ducklake:postgres:dbname=argus host=127.0.0.1
    data_path=/srv/argus/lake'
    """
    counts = copy_store(src, dst)
    if as_json:
        print_json({"rows": counts})
    else:
        click.echo(f"copied {counts.get('run', 0)} runs, "
                   f"{sum(counts.values())} rows in {len(counts)} tables: {src} -> {dst}")
