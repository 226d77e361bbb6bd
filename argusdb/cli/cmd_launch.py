"""``argus launch``: multi-process launches (torchrun): ingest one, diff two versions, trace."""

from __future__ import annotations

import json
import math

import click

from argusdb.cli.output import handle_errors, print_table
from argusdb.distributed.answers import collective_diff, launch_trace
from argusdb.distributed.ingest import ingest_launch
from argusdb.ingest import parse_options
from argusdb.regions import ProgramSource
from argusdb.store import Store


@click.group("launch")
def command() -> None:
    """Multi-process launches: every rank's artefacts as runs of one launch group.

    Record a launch with 'torchrun ... -m argusdb.distributed.bootstrap PROG' (ARGUS_DIST_MODE
    events|forced|cupti|profiler, ARGUS_DIST_OUT, ARGUS_LAUNCH_GROUP), then ingest its folder.

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
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@handle_errors
def ingest(store: str, paths: tuple[str, ...], program_path: str | None,
           options: tuple[str, ...], launch_group: str | None, as_json: bool) -> None:
    """Ingest the artefacts of one launch (a folder or files, one per rank and collector)."""
    program = ProgramSource.from_path(program_path) if program_path else None
    with Store.open(store, create=True) as st:
        res = ingest_launch(st, list(paths), program, parse_options(options), launch_group)
    if as_json:
        click.echo(json.dumps({"ok": True, **res.to_json()}))
    else:
        click.echo(f"launch group {res.launch_group}: {len(res.runs)} runs of "
                   f"{res.world_size} ranks")


@command.command("diff")
@click.argument("store")
@click.option("--from", "from_version", required=True, help="Program version (id).")
@click.option("--to", "to_version", required=True, help="Program version (id).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def diff(store: str, from_version: str, to_version: str, as_json: bool) -> None:
    """Compare two versions per step and per collective (timing-clean runs), with CIs."""
    with Store.open(store, read_only=True) as st:
        rows = collective_diff(st, from_version, to_version)
    cols = ["quantity", "key", "from_n", "to_n", "from_median_ns", "to_median_ns", "ratio",
            "ci_low", "ci_high", "p_value", "significant"]

    def cell(v: object) -> object:
        return None if isinstance(v, float) and math.isnan(v) else v
    print_table(cols, [[cell(r[c]) for c in cols] for r in rows], as_json=as_json)


@command.command("trace")
@click.argument("store")
@click.argument("launch_group")
@click.argument("out")
@handle_errors
def trace(store: str, launch_group: str, out: str) -> None:
    """Write a launch group as Perfetto JSON: a process per rank, a thread per stream."""
    with Store.open(store, read_only=True) as st:
        doc = launch_trace(st, launch_group)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    click.echo(f"wrote {out} ({len(doc['traceEvents'])} events)", err=True)
