"""``argus demo [STORE]``: build a store from shipped H200 recordings and answer from it."""

from __future__ import annotations

import click

from argusdb import checker, demo
from argusdb.api import connect
from argusdb.cli.output import handle_errors, print_table
from argusdb.errors import UsageError


@click.command("demo")
@click.argument("store", default="argus-demo.duckdb")
@handle_errors
def command(store: str) -> None:
    """Ingest the shipped H200 artefacts into STORE and print answers from them."""
    with connect(store, create=True) as db:
        foreign = demo.foreign_runs(db.store)
        if foreign:
            raise UsageError(f"{store}: holds {foreign} runs that are not demo recordings; "
                             "the demo would mix its versions into them. pass a new path, "
                             "e.g. 'argus demo argus-demo.duckdb'")
        results = demo.build(db.store)
        checker.refresh_metadata(db.store)  # a later 'argus query' reads the stored summary
        for r in results:
            state = "already in store" if r.already else f"{sum(r.rows.values())} rows"
            click.echo(f"ingested {r.path.split('/')[-1]} ({r.kind}): {state}", err=True)
        click.echo(f"\n-- {demo.QUESTION}\n")
        table = db.query(demo.QUESTION)
        print_table(table.column_names, [tuple(r.values()) for r in table.to_pylist()])
        click.echo(f"\n-- {demo.REGION_BREAKDOWN}\n")
        table = db.query(demo.REGION_BREAKDOWN)
        print_table(table.column_names, [tuple(r.values()) for r in table.to_pylist()])
