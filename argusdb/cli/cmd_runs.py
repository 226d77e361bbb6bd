"""``argus runs STORE``: list runs with their interference signatures, or the snapshots."""

from __future__ import annotations

import click

from argusdb.cli.output import handle_errors, output_options, print_table
from argusdb.store import Store

_COLS = ["run_id", "program_version", "collector", "kind", "artefact_name", "signature",
         "timing_clean", "tool_version", "device", "ingested_at"]
_SNAP_COLS = ["snapshot_id", "committed_at", "kind", "run_ids"]


@click.command("runs")
@click.argument("store")
@click.option("--snapshots", is_flag=True,
              help="List the store's snapshots (what 'argus query --as-of' takes) instead.")
@click.option("--as-of", "as_of", metavar="SNAPSHOT|TIME",
              help="List the runs as the store stood at this snapshot or ISO time (UTC).")
@output_options
@handle_errors
def command(store: str, as_json: bool, as_csv: bool, snapshots: bool = False,
            as_of: str | None = None) -> None:
    """List the runs of STORE, oldest first, with their interference signatures.

    With --snapshots, list its snapshots: each committed ingest, when, and the runs it added
    (an embedded store's own; a shared store's DuckLake snapshots).
    """
    with Store.open(store, read_only=True, as_of=as_of) as st:
        if snapshots:
            rows = [tuple(s[c] for c in _SNAP_COLS) for s in st.snapshots()]
            print_table(_SNAP_COLS, rows, as_json, as_csv)
            return
        rows = st.sql(f"SELECT {', '.join(_COLS)} FROM run ORDER BY run_seq").fetchall()
    print_table(_COLS, rows, as_json, as_csv)
