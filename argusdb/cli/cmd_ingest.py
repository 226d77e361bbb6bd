"""``argus ingest STORE PATH...``: read artefacts into runs."""

from __future__ import annotations

import sys

import click

from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_json
from argusdb.errors import UsageError
from argusdb.ingest import expand_paths, parse_options, prepare
from argusdb.regions import ProgramSource
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
@output_options(csv=False)
@handle_errors
def command(store: str, paths: tuple[str, ...], program_path: str | None,
            options: tuple[str, ...], parent_version: str | None, transform: str | None,
            transform_task: str | None, as_json: bool, lock_timeout: float | None = None
            ) -> None:
    """Ingest artefacts (kind detected from content), each as one run, all in one transaction.

    With --program, the artefacts share the GPU target any of them states (a conflict is
    refused, nothing written). Without it, a version is identified by what each artefact
    states: kernel names, application, device model.

    PATHS are files, folders (every artefact under a folder that a collector recognizes) or
    glob patterns (quoted, e.g. 'runs/**/*.cupti.jsonl'). STORE may be left out when
    $ARGUS_STORE names it.

    Example: argus ingest argus.duckdb softmax.source.csv --program softmax.py
    """
    opts = parse_options(options)
    if bool(parent_version) != bool(transform):
        raise UsageError("--parent-version and --transform go together: a variant names its "
                         "parent and the transform that made it")
    variant = VariantOf(parent_version, transform, transform_task) \
        if parent_version and transform else None
    program = ProgramSource.from_path(program_path) if program_path else None
    files = expand_paths(paths)
    if not files:
        raise UsageError(f"no artefact found in {', '.join(paths)}: name artefact files or "
                         "folders that hold them")
    # A progress bar on a terminal (stderr) for many files.
    quiet = click.get_current_context().find_root().meta.get("argus.quiet", False)
    bar = click.progressbar(length=len(files), label="ingest", file=sys.stderr) \
        if len(files) > 1 and sys.stderr.isatty() and not quiet else None
    # Every artefact is read and checked before the store is opened: a refused one leaves the
    # store untouched, byte for byte, and refuses the whole command.
    prepared = prepare(files, program, opts)
    with connect(store, create=True, lock_timeout=lock_timeout) as db:
        # One transaction for the whole command: a conflict or a corrupt file writes nothing.
        # The library's ingest path: materializations and checker metadata refreshed.
        try:
            results = db.ingest_many(list(files), program, opts, variant=variant,
                                     progress=(lambda _: bar.update(1)) if bar else None,
                                     prepared=prepared)
        finally:
            if bar is not None:
                bar.render_finish()
    if not as_json:
        for r in results:
            what = "already ingested" if r.already else ", ".join(
                f"{n} {t}" for t, n in r.rows.items())
            click.echo(f"{r.path}: run {r.run_id} (version {r.program_version}, {r.kind}): "
                       f"{what}")
            if r.other:
                click.echo(f"{r.path}: {len(r.other['kernels'])} other kernels (not "
                           f"@triton.jit functions of --program) kept as timeline run "
                           f"{r.other['run_id']} (version {r.other['program_version']})")
    if as_json:
        print_json({"runs": [r.to_json() for r in results]})
