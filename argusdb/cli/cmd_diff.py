"""``argus diff STORE --region R --from V --to V``: compare a region across two versions."""

from __future__ import annotations

import click

from argusdb.answers.diff import ALPHA, MIN_EFFECT, diff
from argusdb.api import connect
from argusdb.cli.output import (
    handle_errors,
    output_options,
    print_json,
    print_table,
    timeout_option,
)


@click.command("diff")
@click.argument("store")
@click.option("--region", required=True, help="Region ID, e.g. matmul/matmul_kernel.")
@click.option("--from", "before", required=True, metavar="VERSION",
              help="Version ID or prefix, run ID (that run only), or KEY=VALUE of --option.")
@click.option("--to", "after", required=True, metavar="VERSION", help="Same forms as --from.")
@click.option("--signal", "signals", multiple=True, help="Signal to compare (repeatable); "
              "default: every signal both versions have.")
@click.option("--min-effect", type=float, default=MIN_EFFECT, show_default=True,
              help="Smallest relative change that may count as significant.")
@click.option("--alpha", type=float, default=ALPHA, show_default=True,
              help="Significance level of the Mann-Whitney U test.")
@timeout_option
@output_options
@handle_errors
def command(store: str, region: str, before: str, after: str, signals: tuple[str, ...],
            min_effect: float, alpha: float, timeout_s: float, as_json: bool, as_csv: bool) -> None:
    """Compare REGION between two program versions over repeated launches.

    Prints medians, the ratio to/from with a bootstrap 95 % CI, a Mann-Whitney U p-value and the
    noise floor; "not significant" when the change is within the noise. Refuses (exit 1, with
    rule codes) evidence that is not comparable.

    Example: argus diff argus.duckdb --region matmul/matmul_kernel --from variant=naive
    --to variant=tiled --signal duration
    """
    from argusdb.answers.ranks import collective_rows

    with connect(store, read_only=True, timeout_s=timeout_s) as db:
        result = diff(db, region, before, after, list(signals) or None, min_effect=min_effect,
                      alpha=alpha)
        # Distributed programs: per step and per collective, from timing-clean launches.
        coll = collective_rows(db.store, result.from_ref.program_version,
                               result.to_ref.program_version)
    if as_json:
        print_json({**result.to_json(), **({"collectives": coll} if coll else {})})
        return
    cols = ["signal", "from_median", "to_median", "ratio", "ci_low", "ci_high", "p_value",
            "n_from", "n_to", "unattributed_share", "sufficiency", "verdict"]
    print_table(cols, [[getattr(r, c) for c in cols] for r in result.rows], as_csv=as_csv)
    if as_csv:
        return
    click.echo(f"\nregion {region}: {result.from_ref.program_version} -> "
               f"{result.to_ref.program_version}", err=True)
    for r in result.rows:
        click.echo(f"{r.signal}: noise floor {r.noise_floor:.2%} ({r.noise_source}); "
                   f"{r.standing} ({r.signature}), {r.evidence_class}, {r.scope}", err=True)
    for n in result.notes:
        click.echo(f"note: {n}", err=True)
    if coll:
        click.echo("\nper step and per collective (timing-clean launches; ratio = to/from):")
        cols = ["quantity", "key", "from_n", "to_n", "from_median_ns", "to_median_ns", "ratio",
                "ci_low", "ci_high", "p_value", "significant"]
        print_table(cols, [[r[c] for c in cols] for r in coll])
