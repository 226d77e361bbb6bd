"""``argus demo [STORE]``: build a store from shipped H200 recordings and answer from it."""

from __future__ import annotations

import click

from argusdb.api import checked, connect
from argusdb.api.surface import demo
from argusdb.cli.output import handle_errors, output_options, print_json, print_table
from argusdb.errors import UsageError


@click.command("demo")
@click.argument("store", default="argus-demo.duckdb")
@output_options(csv=False)
@handle_errors
def command(store: str, as_json: bool) -> None:
    """Ingest the shipped H200 artefacts into STORE and print answers from them."""
    with connect(store, create=True) as db:
        foreign = demo.foreign_runs(db.store)
        if foreign:
            raise UsageError(f"{store}: holds {foreign} run{'s' if foreign > 1 else ''} of its own "
                             "(not demo recordings); "
                             f"the demo would mix its versions into them.\n  fix: pass a "
                             f"new path, e.g. 'argus demo {_fresh_name(store)}'")
        results = demo.build(db.store)
        checked.refresh_metadata(db.store)  # a later 'argus query' reads the stored summary
        answers = [(q, db.query(q)) for q in (demo.QUESTION, demo.REGION_BREAKDOWN)]
    if as_json:
        print_json({"runs": [r.to_json() for r in results], "answers": [
            {"query": q, "columns": t.column_names,
             "rows": [list(r.values()) for r in t.to_pylist()]} for q, t in answers]})
        return
    for r in results:
        state = "already in store" if r.already else f"{sum(r.rows.values())} rows"
        click.echo(f"ingested {r.path.split('/')[-1]} ({r.kind}): {state}", err=True)
    for q, table in answers:
        click.echo(f"\n-- {q}\n")
        print_table(table.column_names, [tuple(r.values()) for r in table.to_pylist()])


def _fresh_name(store: str) -> str:
    """A store path beside ``store`` that does not exist yet (for the refusal's hint)."""
    from pathlib import Path

    p = Path(store)
    if "://" in store or ":" in p.name:
        return "argus-demo.duckdb"
    for i in range(2, 1000):
        candidate = p.with_name(f"{p.stem}-{i}{p.suffix}")
        if not candidate.exists():
            return str(candidate)
    return str(p.with_name(f"{p.stem}-new{p.suffix}"))
