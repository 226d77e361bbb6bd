"""``argus export STORE OUT``: a run, a region tree or a query answer for other tools."""

from __future__ import annotations

import click

from argusdb.answers import export
from argusdb.answers.wire import dump
from argusdb.api import connect
from argusdb.cli.output import (
    check_output_path,
    handle_errors,
    output_options,
    print_json,
    timeout_option,
)
from argusdb.errors import UsageError


@click.command("export")
@click.argument("store")
@click.argument("out")
@click.option("--format", "fmt", required=True,
              type=click.Choice(["perfetto", "hatchet", "parquet"]),
              help="perfetto: Chrome trace JSON of --run; hatchet: region tree JSON of "
                   "--version; parquet: the answer of --query.")
@click.option("--run", "run_id", multiple=True,
              help="Run ID (or prefix) for --format perfetto; repeat it for several runs.")
@click.option("--version", help="Version selector for --format hatchet.")
@click.option("--program", help="Program name, to disambiguate a KEY=VALUE --version.")
@click.option("--query", "sql", help="Checked SQL for --format parquet.")
@timeout_option
@output_options(csv=False)
@handle_errors
def command(store: str, out: str, fmt: str, run_id: tuple[str, ...], version: str | None,
            program: str | None, sql: str | None, timeout_s: float, as_json: bool) -> None:
    """Export to OUT: Perfetto/Chrome trace JSON of a run, Hatchet JSON of a region tree, or
    Parquet of a checked query.

    \b
    Examples:
      argus export argus.duckdb run.json --run f3734403 --format perfetto
      argus export argus.duckdb tree.json --version variant=a --format hatchet
      argus export argus.duckdb q.parquet --format parquet --query "SELECT ..."
    """
    need = {"perfetto": ("--run", run_id), "hatchet": ("--version", version),
            "parquet": ("--query", sql)}[fmt]
    if not need[1]:
        raise UsageError(f"--format {fmt} needs {need[0]}")
    check_output_path(out)
    with connect(store, read_only=True, timeout_s=timeout_s) as db:
        if fmt == "perfetto":
            doc: object = export.perfetto_trace(db, list(run_id))
            n = len(doc["traceEvents"])  # type: ignore[index]
        elif fmt == "hatchet":
            doc = export.hatchet_literal(db, str(version), program)
            n = 0
        else:
            n = export.parquet(db, str(sql), out)
            doc = None
    if doc is not None:
        with open(out, "w", encoding="utf-8") as fh:
            dump(doc, fh, default=str)
    if as_json:
        print_json({"format": fmt, "out": out, "events_or_rows": n})
    else:
        click.echo(f"wrote {out} ({fmt})", err=True)
