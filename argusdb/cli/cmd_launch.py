"""``argus launch``: multi-process launches (torchrun): ingest one, diff two versions, trace."""

from __future__ import annotations

import math

import click

from argusdb.answers.ranks import collective_diff, launch_trace
from argusdb.answers.wire import dump
from argusdb.api import connect
from argusdb.api.surface import parse_options
from argusdb.cli.output import (
    handle_errors,
    output_options,
    print_json,
    print_step_diff,
    print_table,
)


@click.group("launch")
def command() -> None:
    """Multi-process launches: every rank's artefacts as runs of one launch group.

    Record a launch with 'torchrun ... -m argusdb.observe.launch.rank_boot PROG' (ARGUS_DIST_MODE
    events|forced|cupti|profiler, ARGUS_DIST_OUT, ARGUS_LAUNCH_GROUP), then ingest its folder.

    \b
    Examples:
      argus launch ingest argus.duckdb out/xl-serial-events-1 --program tp_block.py
      argus launch diff argus.duckdb --from 593565e8 --to 812dae0b
      argus launch trace argus.duckdb xl-overlap-cupti-1 trace.json
    """


@command.command("ingest")
@click.argument("store")
@click.argument("paths", nargs=-1, required=True)
@click.option("--program", "program_path", help="Source file of the program's Triton kernels.")
@click.option("--option", "options", multiple=True, help="KEY=VALUE of the program version.")
@click.option("--launch-group", help="Launch group name (default: as the artefacts state it).")
@output_options(csv=False)
@handle_errors
def ingest(store: str, paths: tuple[str, ...], program_path: str | None,
           options: tuple[str, ...], launch_group: str | None, as_json: bool) -> None:
    """Ingest the artefacts of one launch (a folder or files, one per rank and collector)."""
    with connect(store, create=True) as db:
        res = db.ingest_launch(list(paths), program_path, parse_options(options), launch_group)
    if as_json:
        print_json(res.to_json())
    else:
        click.echo(f"launch group {res.launch_group}: {len(res.runs)} runs of "
                   f"{res.world_size} ranks")


@command.command("diff")
@click.argument("store")
@click.option("--from", "from_version", required=True, metavar="VERSION",
              help="Version ID or prefix, run ID, or KEY=VALUE of --option (as argus diff).")
@click.option("--to", "to_version", required=True, metavar="VERSION",
              help="Same forms as --from.")
@output_options
@handle_errors
def diff(store: str, from_version: str, to_version: str, as_json: bool, as_csv: bool) -> None:
    """Compare two versions per step and per collective (timing-clean runs), with CIs.

    \b
    Examples:
      argus launch diff argus.duckdb --from version=serial --to version=overlap
      argus launch diff argus.duckdb --from 593565e8 --to 812dae0b
    """
    from argusdb.answers.select import resolve_versions

    # Collectives and steps are read as ingested (no materialization): a stale store is fine.
    with connect(store, read_only=True, require_fresh=False) as db:
        before, after = resolve_versions(db, [from_version, to_version])
        rows = collective_diff(db.store, before.program_version, after.program_version)
    cols = ["quantity", "key", "from_n", "to_n", "from_median_ns", "to_median_ns", "ratio",
            "ci_low", "ci_high", "p_value", "significant"]

    def cell(v: object) -> object:
        return None if isinstance(v, float) and math.isnan(v) else v
    if as_json or as_csv:
        print_table(cols, [[cell(r[c]) for c in cols] for r in rows], as_json, as_csv,
                    extra={"from": before.program_version, "to": after.program_version})
        return
    click.echo(f"{before.label} ({before.program_version}) -> {after.label} "
               f"({after.program_version}), timing-clean launches; ratio = to/from", err=True)
    print_step_diff(rows)


@command.command("trace")
@click.argument("store")
@click.argument("launch_group")
@click.argument("out")
@output_options(csv=False)
@handle_errors
def trace(store: str, launch_group: str, out: str, as_json: bool) -> None:
    """Write a launch group as Perfetto JSON: a process per rank, a thread per stream."""
    with connect(store, read_only=True, require_fresh=False) as db:
        doc = launch_trace(db.store, launch_group)
    with open(out, "w", encoding="utf-8") as fh:
        dump(doc, fh)
    if as_json:
        print_json({"out": out, "events": len(doc["traceEvents"])})
    else:
        click.echo(f"wrote {out} ({len(doc['traceEvents'])} events)", err=True)
