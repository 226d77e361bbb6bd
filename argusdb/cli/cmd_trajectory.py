"""``argus trajectory STORE --versions V1,V2,V3``: regions along an ordered series of versions."""

from __future__ import annotations

import click

from argusdb.answers.trajectory import human_table, trajectory
from argusdb.api import connect
from argusdb.cli.output import (
    handle_errors,
    output_options,
    print_json,
    print_table,
    timeout_option,
)

#: Notes printed in the default (screen) view.
NOTES = 5


@click.command("trajectory")
@click.argument("store")
@click.option("--region", "regions", multiple=True,
              help="Region ID (repeatable); default every region with evidence.")
@click.option("--versions", required=True, metavar="V1,V2,...",
              help="Ordered version selectors (ID or prefix, run ID, or KEY=VALUE; separate "
                   "KEY=VALUE selectors with ';').")
@click.option("--signal", "signals", multiple=True, help="Signal to follow (repeatable).")
@click.option("--all", "all_series", is_flag=True,
              help="Print every series, also those with a value in one version only (default: "
                   "what fits a screen, the headline signals and the largest steps first; "
                   "--json and --csv always have every point).")
@timeout_option
@output_options
@handle_errors
def command(store: str, regions: tuple[str, ...], versions: str, signals: tuple[str, ...],
            all_series: bool, timeout_s: float, as_json: bool, as_csv: bool) -> None:
    """Show each region's evolution along an ordered series of program versions.

    Regions are followed by region ID, so a version whose lines moved is the same region.

    \b
    Example:
      argus trajectory argus.duckdb --region matmul/matmul_kernel \\
        --versions variant=naive,variant=tiled,variant=tuned --signal duration
    """
    sep = ";" if ";" in versions else ","
    with connect(store, read_only=True, timeout_s=timeout_s,
                 cpu_time=True) as db:
        t = trajectory(db, list(regions) or None, [v for v in versions.split(sep) if v],
                       list(signals) or None)
    if as_json:
        print_json(t.to_json())
        return
    if as_csv:
        cols = ["region_id", "signal", "unit", "standing", "evidence_class", "version", "lines",
                "n", "median", "ci_low", "ci_high", "unattributed_share", "sufficiency",
                "step_ratio", "step_verdict"]
        print_table(cols, [[s.region_id, s.signal, s.unit, s.key.standing,
                            s.key.evidence_class, p.label,
                            f"{p.start_line}-{p.end_line}" if p.start_line else None, p.n,
                            p.median, p.ci_low, p.ci_high, p.unattributed_share, p.sufficiency,
                            p.step_ratio, p.step_verdict]
                           for s in t.series for p in s.points], as_csv=True)
        return
    screen = human_table(t, all_series=all_series)
    print_table(screen.columns, screen.rows, right=screen.right)
    more = screen.more_line()
    if more:
        click.echo(more)
    shown = t.notes if all_series else t.notes[:NOTES]
    for n in shown:
        click.echo(f"note: {n}", err=True)
    if len(shown) < len(t.notes):
        click.echo(f"+ {len(t.notes) - len(shown)} more notes (--all or --json)", err=True)
