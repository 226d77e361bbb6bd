"""``argus report STORE --region R``: claims about a region, with classes and verdicts."""

from __future__ import annotations

import json

import click

from argusdb.answers.report import MAX_ENTROPY_BITS, report
from argusdb.api import connect
from argusdb.cli.output import handle_errors, print_table


@click.command("report")
@click.argument("store")
@click.option("--region", required=True, help="Region ID, e.g. softmax/softmax_fwd/reduce.")
@click.option("--version", "versions", multiple=True,
              help="Version selector (repeatable); default every version with evidence.")
@click.option("--signal", "signals", multiple=True, help="Signal (repeatable); default all.")
@click.option("--max-entropy", type=float, default=MAX_ENTROPY_BITS, show_default=True,
              help="Association entropy (bits) above which an attributed claim is "
                   "insufficient.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def command(store: str, region: str, versions: tuple[str, ...], signals: tuple[str, ...],
            max_entropy: float, as_json: bool) -> None:
    """Report every claim about REGION for an agent: value, evidence class, provenance
    (versions, runs, tasks), ambiguity notes, repeat statistics and a policy verdict.

    Example: argus report argus.duckdb --region matmul/matmul_kernel --json
    """
    with connect(store, read_only=True) as db:
        rep = report(db, region, list(versions) or None, signals=list(signals) or None,
                     max_entropy_bits=max_entropy)
    if as_json:
        click.echo(json.dumps(rep.to_json(), default=str))
        return
    cols = ["program_version", "signal", "value", "unit", "evidence_class", "n", "iqr", "cv",
            "association_entropy", "verdict"]
    print_table(cols, [[getattr(c, k) for k in cols] for c in rep.claims])
    for c in rep.claims:
        click.echo(f"{c.program_version} {c.signal}: {c.verdict}: {c.reason}; runs "
                   f"{', '.join(c.runs)}; {c.signature}", err=True)
