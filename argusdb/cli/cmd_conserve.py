"""``argus conserve STORE``: check that attribution conserves the observed totals."""

from __future__ import annotations

import sys

import click

from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_table


@click.command("conserve")
@click.argument("store")
@output_options
@handle_errors
def command(store: str, as_json: bool, as_csv: bool) -> None:
    """Check conservation of attributed evidence in STORE.

    Per run, kernel and signal, the region-level attributed values (_unattributed included)
    must sum to the observed total of the instruction-level rows, up to float rounding
    (1e-9 relative). Refreshes stale attribution first. Prints one line per run and kernel
    (--json/--csv: one row per run, kernel and signal). Exit 0 when everything is conserved,
    1 when a total is not.
    """
    with connect(store) as db:  # read-write: the open refreshes stale attribution
        table = db.conservation()
        summary = db.conservation(summary=True) if not (as_json or as_csv) else None
    rows = table.to_pylist()
    bad = sum(1 for r in rows if not r["ok"])
    if summary is None:
        print_table(table.column_names, [tuple(r.values()) for r in rows], as_json, as_csv,
                    extra={"conserved": bad == 0})
    else:
        print_table(summary.column_names, [tuple(r.values()) for r in summary.to_pylist()])
        for r in [r for r in rows if not r["ok"]][:20]:
            click.echo(f"not conserved: run {r['run_id']} kernel {r['kernel']} signal "
                       f"{r['signal']}: observed {r['observed']}, attributed "
                       f"{r['attributed']}", err=True)
    if bad:
        click.echo(f"{bad} (run, kernel, signal) totals are not conserved", err=True)
        sys.exit(1)
