"""``argus conserve STORE``: check that attribution conserves the observed totals."""

from __future__ import annotations

import sys

import click

from argusdb import materialize
from argusdb.cli.output import handle_errors, output_options, print_table
from argusdb.store import Store

_SUMMARY = """
SELECT run_id, kernel, count(*) AS signals, count(*) FILTER (WHERE ok) AS conserved,
       max(abs(difference)) AS max_abs_difference
FROM attribution_conservation GROUP BY ALL ORDER BY run_id, kernel
"""


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
    with Store.open(store) as st:
        materialize.ensure_fresh(st)
        if as_json or as_csv:
            table = st.arrow("SELECT * FROM attribution_conservation "
                             "ORDER BY run_id, kernel, signal")
            rows = [tuple(r.values()) for r in table.to_pylist()]
            print_table(table.column_names, rows, as_json, as_csv,
                        extra={"conserved": all(r["ok"] for r in table.to_pylist())})
            bad = sum(1 for r in table.to_pylist() if not r["ok"])
        else:
            summary = st.rows(_SUMMARY)
            print_table(["run_id", "kernel", "signals", "conserved", "max_abs_difference"],
                        [tuple(r.values()) for r in summary])
            bad = sum(r["signals"] - r["conserved"] for r in summary)
            for r in st.rows("SELECT * FROM attribution_conservation WHERE NOT ok "
                             "ORDER BY ALL LIMIT 20"):
                click.echo(f"not conserved: run {r['run_id']} kernel {r['kernel']} signal "
                           f"{r['signal']}: observed {r['observed']}, attributed "
                           f"{r['attributed']}", err=True)
    if bad:
        click.echo(f"{bad} (run, kernel, signal) totals are not conserved", err=True)
        sys.exit(1)
