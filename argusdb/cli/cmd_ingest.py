"""``argus ingest STORE PATH...``: read artefacts into runs."""

from __future__ import annotations

import json

import click

from argusdb import checker
from argusdb.cli.output import handle_errors
from argusdb.errors import UsageError
from argusdb.ingest import ingest_path, parse_options
from argusdb.regions import ProgramSource
from argusdb.store import Store
from argusdb.variants import VariantOf


@click.command("ingest")
@click.argument("store")
@click.argument("paths", nargs=-1, required=True)
@click.option("--program", "program_path", help="Triton source file the kernels come from.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Compile option, constexpr or toolchain fact the artefact cannot tell "
                   "(repeatable); enters the program version.")
@click.option("--parent-version", help="Bind the version as a variant of this parent version.")
@click.option("--transform", help="Transform that made the variant, e.g. "
                                  "'forced_wait:softmax/softmax_fwd/load' (with --parent-version).")
@click.option("--transform-task", help="Task that made the variant (default 'x-<version>').")
@click.option("--lock-timeout", type=float, default=None, metavar="S",
              help="Wait at most S seconds for another process's lock on the store "
                   "(default: ARGUS_LOCK_TIMEOUT, else 120).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def command(store: str, paths: tuple[str, ...], program_path: str | None,
            options: tuple[str, ...], parent_version: str | None, transform: str | None,
            transform_task: str | None, as_json: bool, lock_timeout: float | None = None
            ) -> None:
    """Ingest artefacts (kind detected from content), each as one run, atomically.

    Example: argus ingest argus.duckdb softmax.source.csv --program softmax.py
    """
    opts = parse_options(options)
    if bool(parent_version) != bool(transform):
        raise UsageError("--parent-version and --transform go together: a variant names its "
                         "parent and the transform that made it")
    variant = VariantOf(parent_version, transform, transform_task) \
        if parent_version and transform else None
    program = ProgramSource.from_path(program_path) if program_path else None
    results = []
    with Store.open(store, create=True, lock_timeout=lock_timeout) as st:
        for p in paths:
            r = ingest_path(st, p, program, opts, variant)
            results.append(r)
            if not as_json:
                what = "already ingested" if r.already else ", ".join(
                    f"{n} {t}" for t, n in r.rows.items())
                click.echo(f"{p}: run {r.run_id} (version {r.program_version}, {r.kind}): "
                           f"{what}")
        checker.refresh_metadata(st)
    if as_json:
        click.echo(json.dumps({"runs": [r.to_json() for r in results]}))
