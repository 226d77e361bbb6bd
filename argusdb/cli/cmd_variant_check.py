"""``argus variant-check STORE VARIANT``: record that a variant computes its parent's result."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import Number, handle_errors, output_options, print_json


@click.command("variant-check")
@click.argument("store")
@click.argument("variant_version")
@click.option("--parent", "parent_version", required=True, help="Parent program version.")
@click.option("--rel-err", type=Number(0), required=True,
              help="Relative error of the variant's output against the parent's.")
@click.option("--tolerance", type=Number(0), default=1e-5, show_default=True,
              help="Largest relative error accepted as the same result.")
@click.option("--task", "task_id", help="Task that ran the check.")
@output_options(csv=False)
@handle_errors
def command(store: str, variant_version: str, parent_version: str, rel_err: float,
            tolerance: float, task_id: str | None, as_json: bool) -> None:
    """Record a result check of VARIANT_VERSION against its parent.

    Derivation (e.g. exposed latency from a forced wait) uses a variant's runs only while its
    latest check passed. Exit 0 when it passed, 1 when the results differ.

    Example: argus variant-check argus.duckdb 3f2a... --parent 9c1e... --rel-err 2.1e-8
    """
    with connect(store) as db:
        passed = db.record_variant_check(variant_version, parent_version, rel_err, tolerance,
                                         task_id)
    if as_json:
        print_json({"passed": passed, "rel_err": rel_err, "tolerance": tolerance})
    else:
        click.echo(f"{variant_version}: rel err {rel_err:.3g} vs {parent_version} "
                   f"{'<=' if passed else '>'} {tolerance:g}: "
                   f"{'same result' if passed else 'result differs'}")
    if not passed:
        raise SystemExit(1)
