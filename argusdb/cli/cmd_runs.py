"""``argus runs STORE``: list runs with their interference signatures."""

from __future__ import annotations

import click

from argusdb.cli.output import handle_errors, output_options, print_table
from argusdb.store import Store

_COLS = ["run_id", "program_version", "collector", "kind", "artefact_name", "signature",
         "timing_clean", "tool_version", "device", "ingested_at"]


@click.command("runs")
@click.argument("store")
@output_options
@handle_errors
def command(store: str, as_json: bool, as_csv: bool) -> None:
    """List the runs of STORE, oldest first, with their interference signatures."""
    with Store.open(store, read_only=True) as st:
        rows = st.sql(f"SELECT {', '.join(_COLS)} FROM run ORDER BY run_seq").fetchall()
    print_table(_COLS, rows, as_json, as_csv)
