"""``argus report STORE --region R``: claims about a region, with classes and verdicts."""

from __future__ import annotations

import click

from argusdb.answers.report import MAX_ENTROPY_BITS, report
from argusdb.answers.sufficiency import MAX_UNATTRIBUTED_SHARE
from argusdb.api import connect
from argusdb.cli.output import (
    Number,
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
@click.option("--max-entropy", type=Number(0, 64), default=MAX_ENTROPY_BITS, show_default=True,
              help="Association entropy (bits) above which an attributed claim is "
                   "insufficient.")
@click.option("--max-unattributed", type=Number(0, 1), default=MAX_UNATTRIBUTED_SHARE,
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
@click.option("--all", "all_rows", is_flag=True,
              help="Every signal and every stall reason (the default shows the top ones).")
@click.option("--detail", is_flag=True,
              help="Every claim, one row each: per scope (CTA, warp, ...) and cohort.")
@click.option("--scope", "scopes", multiple=True, metavar="KEY=VALUE",
              help="Only claims of this scope coordinate, e.g. cta=0 (repeatable; implies "
                   "--detail).")
@timeout_option
@output_options
@handle_errors
def command(store: str, region: str, versions: tuple[str, ...], signals: tuple[str, ...],
            max_entropy: float, max_unattributed: float, launch_group: str | None,
            timeline: str | None, perfetto: str | None, all_rows: bool, detail: bool,
            scopes: tuple[str, ...], timeout_s: float, as_json: bool, as_csv: bool) -> None:
    """Report the claims about REGION: value with its unit, evidence class, cohort, verdict.

    The default view fits a screen (120 columns, 60 lines): one line per version and signal,
    signals measured per scope or per launch as n, median, p10-p90 and min-max, stall reasons
    grouped by the collector that sampled them with the top ones shown; a cohort shared by a
    version's lines is named in its title, else by a letter and a legend; long signal names
    are cut in the middle (never two alike). --all shows every signal and reason,
    --detail (or --scope) every claim, --json every field of every claim (provenance, runs,
    tasks, notes, repeat statistics). A region (or every asked --signal) without evidence
    exits 3 with the 'argus observe' request that would produce it.

    \b
    Examples:
      argus report argus.duckdb --region matmul/matmul_kernel
      argus report argus.duckdb --region fused_norm/layernorm_fwd/load --scope cta=0
      argus report argus.duckdb --region matmul/matmul_kernel --json
    """
    from argusdb.answers import rank_views as views

    for out in (timeline, perfetto):
        if out is not None:
            check_output_path(out)
    program = region.split("/", 1)[0]
    with connect(store, read_only=True, timeout_s=timeout_s,
                 cpu_time=True) as db:
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
        summary = []
        if rep is not None and not (as_json or as_csv or detail or scopes):
            from argusdb.answers.summary import summarise

            summary = summarise(db, rep, all_rows=all_rows)
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
    claims = rep.claims
    if scopes:
        wanted = set(_scope_pairs(scopes))
        claims = [c for c in claims if wanted <= set(c.scope.split(","))]
    if as_csv or detail or scopes:
        cols = ["program_version", "signal", "scope", "value", "unit", "evidence_class",
                "standing", "n", "iqr", "cv", "association_entropy", "unattributed_share",
                "verdict"]
        if as_csv:
            print_table(cols, [[getattr(c, k) for k in cols] for c in claims], as_csv=True)
            return
        from argusdb.answers import format as fmt

        print_table(["program_version", "signal", "scope", "value", "class", "standing", "n",
                     "iqr", "cv", "entropy", "unattributed", "verdict"],
                    [[c.program_version, c.signal, c.scope, fmt.quantity(c.value, c.unit),
                      c.evidence_class, fmt.text(c.standing), c.n, fmt.quantity(c.iqr, c.unit),
                      fmt.number(c.cv), fmt.quantity(c.association_entropy, "bits"),
                      fmt.share(c.unattributed_share), c.verdict] for c in claims],
                    right=[False, False, False, True, False, False, True, True, True, True,
                           True, False])
        for m in rep.missing:
            click.echo(f"no evidence: {m['signal']}\n  to produce it: {m['request']}",
                       err=True)
    else:
        for line in summary:
            click.echo(line)
    for line in views.describe(ranks):
        click.echo(line)


def _scope_pairs(scopes: tuple[str, ...]) -> list[str]:
    """``--scope KEY=VALUE`` values, checked: KEY a scope coordinate, VALUE given."""
    from argusdb.schema.shape import SCOPE

    out = []
    for s in scopes:
        key, eq, value = s.partition("=")
        if not eq or not value or key not in SCOPE:
            raise UsageError(f"--scope {s!r}: give KEY=VALUE with KEY one of "
                             f"{', '.join(SCOPE)}, e.g. --scope cta=0")
        out.append(f"{key}={value}")
    return out
