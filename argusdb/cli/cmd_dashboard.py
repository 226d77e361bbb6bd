"""``argus dashboard STORE --out DIR``: a static, self-contained HTML dashboard."""

from __future__ import annotations

import click

from argusdb.answers.dashboard import build
from argusdb.api import connect
from argusdb.cli.output import (
    check_output_path,
    handle_errors,
    output_options,
    print_json,
    timeout_option,
)


@click.command("dashboard")
@click.argument("store")
@click.option("--out", "out_dir", required=True, help="Directory to write index.html into.")
@click.option("--signal", "signals", multiple=True,
              help="Signal to show (repeatable); default duration, inst_executed, "
                   "warp_stall_samples, exposed_latency where present.")
@click.option("--variants", is_flag=True, help="Put variants (forced waits, probes) on the "
              "trajectories too.")
@timeout_option
@output_options(csv=False)
@handle_errors
def command(store: str, out_dir: str, signals: tuple[str, ...], variants: bool,
            timeout_s: float, as_json: bool) -> None:
    """Write DIR/index.html: region breakdown, trajectory plots with confidence intervals and
    the diff table, per program (inline SVG charts, no network). Needs matplotlib
    (pip install 'argusdb[dashboard]').

    Example: argus dashboard argus.duckdb --out dash/
    """
    check_output_path(out_dir, folder=True)
    with connect(store, read_only=True, timeout_s=timeout_s) as db:
        page = build(db, out_dir, list(signals) or None, variants)
    if as_json:
        print_json({"out": str(page)})
    else:
        click.echo(str(page))
