"""``argus report STORE --region R``: claims about a region, with classes and verdicts."""

from __future__ import annotations

import click

from argusdb.answers.report import MAX_ENTROPY_BITS, report
from argusdb.answers.sufficiency import MAX_UNATTRIBUTED_SHARE
from argusdb.api import connect
from argusdb.cli.output import handle_errors, output_options, print_json, print_table


@click.command("report")
@click.argument("store")
@click.option("--region", required=True, help="Region ID, e.g. softmax/softmax_fwd/reduce.")
@click.option("--version", "versions", multiple=True,
              help="Version selector (repeatable); default every version with evidence.")
@click.option("--signal", "signals", multiple=True, help="Signal (repeatable); default all.")
@click.option("--max-entropy", type=float, default=MAX_ENTROPY_BITS, show_default=True,
              help="Association entropy (bits) above which an attributed claim is "
                   "insufficient.")
@click.option("--max-unattributed", type=float, default=MAX_UNATTRIBUTED_SHARE,
              show_default=True, help="Share (0..1) of a kernel's total in _unattributed above "
              "which attributed claims about its regions are insufficient.")
@output_options
@handle_errors
def command(store: str, region: str, versions: tuple[str, ...], signals: tuple[str, ...],
            max_entropy: float, max_unattributed: float, as_json: bool, as_csv: bool) -> None:
    """Report every claim about REGION for an agent: value, evidence class, provenance
    (versions, runs, tasks), ambiguity notes, repeat statistics and a policy verdict.

    A region (or every asked --signal) without evidence exits 3 with the 'argus observe'
    request that would produce it.

    Example: argus report argus.duckdb --region matmul/matmul_kernel --json
    """
    with connect(store, read_only=True) as db:
        rep = report(db, region, list(versions) or None, signals=list(signals) or None,
                     max_entropy_bits=max_entropy, max_unattributed=max_unattributed)
    if as_json:
        print_json(rep.to_json())
        return
    cols = ["program_version", "signal", "value", "unit", "evidence_class", "n", "iqr", "cv",
            "association_entropy", "unattributed_share", "verdict"]
    print_table(cols, [[getattr(c, k) for k in cols] for c in rep.claims], as_csv=as_csv)
    if as_csv:
        return
    for c in rep.claims:
        click.echo(f"{c.program_version} {c.signal}: {c.verdict}: {c.reason}; runs "
                   f"{', '.join(c.runs)}; {c.signature}", err=True)
    for m in rep.missing:
        click.echo(f"no evidence: {m['signal']}; to produce it: {m['request']}", err=True)
