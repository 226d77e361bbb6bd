"""``argus report STORE --region R``: claims about a region, with classes and verdicts."""

from __future__ import annotations

import click

from argusdb.answers.report import MAX_ENTROPY_BITS, report
from argusdb.answers.sufficiency import MAX_UNATTRIBUTED_SHARE
from argusdb.api import connect
from argusdb.cli.output import (
    check_output_path,
    handle_errors,
    output_options,
    print_json,
    print_table,
    timeout_option,
)
from argusdb.errors import NoEvidence, UsageError


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
@click.option("--launch-group", default=None, help="Distributed programs: show this launch "
              "group's ranks only (default: every launch group of the region's program).")
@click.option("--timeline", default=None, metavar="FILE.svg", help="Distributed programs: write "
              "steps 1-2 of the launch group (default: the first timing-clean one) as an SVG, "
              "one lane per rank and stream.")
@click.option("--perfetto", default=None, metavar="FILE.json", help="Distributed programs: "
              "write the same launch group as a Perfetto trace (a process per rank, a thread "
              "per stream or host thread).")
@timeout_option
@output_options
@handle_errors
def command(store: str, region: str, versions: tuple[str, ...], signals: tuple[str, ...],
            max_entropy: float, max_unattributed: float, launch_group: str | None,
            timeline: str | None, perfetto: str | None, timeout_s: float, as_json: bool,
            as_csv: bool) -> None:
    """Report every claim about REGION for an agent: value, evidence class, provenance
    (versions, runs, tasks), ambiguity notes, repeat statistics and a policy verdict.

    A region (or every asked --signal) without evidence exits 3 with the 'argus observe'
    request that would produce it.

    Example: argus report argus.duckdb --region matmul/matmul_kernel --json
    """
    from argusdb.answers import rank_views as views

    for out in (timeline, perfetto):
        if out is not None:
            check_output_path(out)
    program = region.split("/", 1)[0]
    with connect(store, read_only=True, timeout_s=timeout_s) as db:
        ranks = views.rank_section(db.store, program, launch_group)
        try:
            rep = report(db, region, list(versions) or None, signals=list(signals) or None,
                         max_entropy_bits=max_entropy, max_unattributed=max_unattributed)
        except (NoEvidence, UsageError) as exc:
            # a distributed program's step or record_function range (<program>/<name>): no
            # source declares it and no claim is keyed to it; its per-rank rows are the answer
            if not ranks or region.count("/") != 1:
                raise
            rep, no_claims = None, str(exc)
        if timeline is not None:
            lg = views.write_timeline(db.store, ranks, program, timeline)
            click.echo(f"wrote {timeline} (launch {lg})", err=True)
        if perfetto is not None:
            lg = views.write_perfetto(db.store, ranks, program, perfetto)
            click.echo(f"wrote {perfetto} (launch {lg})", err=True)
    if rep is None:
        if as_json:
            print_json({"region": region, "claims": [], "no_claims": no_claims,
                        "ranks": ranks})
            return
        click.echo(f"no claims: {no_claims}", err=True)
        for line in views.describe(ranks):
            click.echo(line)
        return
    if as_json:
        print_json({**rep.to_json(), **({"ranks": ranks} if ranks else {})})
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
    for line in views.describe(ranks):
        click.echo(line)
