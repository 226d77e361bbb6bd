"""``argus ingest STORE PATH...``: read artefacts into runs."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from argusdb.api import MAX_TIMEOUT_S, connect
from argusdb.api.surface import (
    INGEST_MEMORY_LIMIT,
    IngestResult,
    ProgramSource,
    VariantOf,
    expand_paths,
    parse_options,
    prepare,
)
from argusdb.cli.output import Number, handle_errors, output_options, print_json
from argusdb.errors import UsageError


def _without_pandas(func: Callable[..., None]) -> Callable[..., None]:
    """``func`` run with pandas refused (:func:`argusdb.schema.arrowvalues.without_pandas`:
    the collectors' arrays would load it, a third of a one-file ingest's CPU)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from argusdb.schema.arrowvalues import without_pandas

        with without_pandas():
            func(*args, **kwargs)

    return wrapper


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
@click.option("--lock-timeout", type=Number(0, MAX_TIMEOUT_S), default=None, metavar="S",
              help="Wait at most S seconds for another process's lock on the store "
                   "(default: ARGUS_LOCK_TIMEOUT, else 120).")
@click.option("--follow-symlinks", is_flag=True,
              help="Take files of a folder that are links to files outside it (refused by "
                   "default: a folder's walk stays inside the folder).")
@output_options(csv=False)
@handle_errors
@_without_pandas
def command(store: str, paths: tuple[str, ...], program_path: str | None,
            options: tuple[str, ...], parent_version: str | None, transform: str | None,
            transform_task: str | None, as_json: bool, lock_timeout: float | None = None,
            follow_symlinks: bool = False) -> None:
    """Ingest artefacts (kind detected from content), each as one run, all in one transaction.

    With --program, the artefacts share the GPU target any of them states (a conflict is
    refused, nothing written). Without it, a version is identified by what each artefact
    states: kernel names, application, device model.

    PATHS are files, folders (every artefact under a folder that a collector recognizes; a
    link out of the folder is refused without --follow-symlinks) or glob patterns (quoted,
    e.g. 'runs/**/*.cupti.jsonl'). STORE may be left out when $ARGUS_STORE names it. Many
    small files are read in worker processes when two cores are idle ($ARGUS_INGEST_WORKERS
    fixes their number; 0 reads them in place).

    Example: argus ingest argus.duckdb softmax.source.csv --program softmax.py
    """
    opts = parse_options(options)
    if bool(parent_version) != bool(transform):
        raise UsageError("--parent-version and --transform go together: a variant names its "
                         "parent and the transform that made it")
    variant = VariantOf(parent_version, transform, transform_task) \
        if parent_version and transform else None
    program = ProgramSource.from_path(program_path) if program_path else None
    files = expand_paths(paths, follow_symlinks)
    if not files:
        raise UsageError(f"no artefact found in {', '.join(paths)}: name artefact files or "
                         "folders that hold them")
    # A progress bar on a terminal (stderr), never in a pipe or a log.
    quiet = click.get_current_context().find_root().meta.get("argus.quiet", False)
    bar = _Bar(files) if sys.stderr.isatty() and not quiet else None
    try:
        # Every artefact is read and checked before the store is opened: a refused one leaves
        # the store untouched, byte for byte, and refuses the whole command.
        prepared = prepare(files, program, opts)
        if bar is not None:
            bar.reading_done(prepared.rows_hint())
        with connect(store, create=True, lock_timeout=lock_timeout,
                     memory_limit=INGEST_MEMORY_LIMIT, threads=prepared.append_threads) as db:
            # One transaction for the whole command: a conflict or a corrupt file writes
            # nothing. The library's ingest path: materializations and checker metadata
            # refreshed.
            results = db.ingest_many(list(files), program, opts, variant=variant,
                                     progress=bar.file_done if bar else None,
                                     progress_rows=bar.rows_taken if bar else None,
                                     prepared=prepared)
    finally:
        if bar is not None:
            bar.close()
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


class _Bar:
    """The command's progress on stderr (tqdm), in bytes of its input files: a file counts
    its size once written, and a large one moves with its rows as they are taken (against
    the row count its reader's first pass states, where it states one). Reading and checking
    every file comes first (the bar says "check"), the refresh of the materializations last
    ("refresh")."""

    def __init__(self, files: list[Path]) -> None:
        from tqdm import tqdm

        self.sizes = [f.stat().st_size for f in files]
        self.hints: list[int | None] = [None] * len(files)
        self.at = 0          # the file being written
        self.rows = 0        # its rows taken so far
        self.written = 0     # bytes of the files written before it
        self.bar: Any = tqdm(total=sum(self.sizes), desc="check", unit="B", unit_scale=True,
                             file=sys.stderr, leave=False)

    def reading_done(self, hints: list[int | None]) -> None:
        self.hints = hints
        self.bar.set_description("ingest")

    def rows_taken(self, n: int) -> None:
        self.rows += n
        hint = self.hints[self.at] if self.at < len(self.hints) else None
        if hint:
            self._move(self.written + int(min(1.0, self.rows / hint) * self.sizes[self.at]))

    def file_done(self, _: IngestResult) -> None:
        if self.at == len(self.sizes):
            return  # a shared store's attempt that another writer overtook, run again
        self.written += self.sizes[self.at]
        self.at, self.rows = self.at + 1, 0
        self._move(self.written)
        if self.at == len(self.sizes):
            self.bar.set_description("refresh")

    def _move(self, to: int) -> None:
        if to > self.bar.n:
            self.bar.update(to - self.bar.n)

    def close(self) -> None:
        self.bar.close()
