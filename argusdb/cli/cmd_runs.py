"""``argus runs STORE``: list runs with their interference signatures, or the snapshots."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_table


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
    with connect(store, read_only=True, as_of=as_of, require_fresh=False) as db:
        table = db.snapshots() if snapshots else db.runs()
        timeline = {str(v["program_version"]) for v in db.program_versions()
                    if v.get("program") is None} if not snapshots else set()
    rows = table.to_pylist()
    if as_json or as_csv or snapshots:
        print_table(table.column_names, [tuple(r.values()) for r in rows], as_json, as_csv)
        return
    from argusdb.answers import format as fmt

    # for reading: the timeline versions (a trace's other kernels) named as such, signatures
    # without what the recording did not state, a tool version nobody recorded said so
    print_table(table.column_names, [tuple(
        (f"{v} (timeline)" if k == "program_version" and v in timeline else
         fmt.signature(v) if k == "signature" and isinstance(v, str) else
         "not stated" if k in ("tool_version", "device") and v is None else v)
        for k, v in r.items()) for r in rows])
