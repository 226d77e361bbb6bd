"""``argus diff STORE --region R --from V --to V``: compare a region across two versions."""

from __future__ import annotations

import math
import sys
from typing import Any

import click

from argusdb.answers import format as fmt
from argusdb.answers.diff import (
    ALPHA,
    MIN_EFFECT,
    SCREEN_ROWS,
    change,
    diff,
    human_table,
    regressions,
    screen_rows,
)
from argusdb.api import connect
from argusdb.cli.output import (
    Number,
    handle_errors,
    output_options,
    print_json,
    print_step_diff,
    print_table,
    timeout_option,
)

#: Exit code of ``--fail-on regression`` when a signal got worse (0, 1, 2, 3 are taken: answered,
#: refused, usage error, no evidence), so a CI job tells a regression from a broken question.
REGRESSION_EXIT = 4
#: Rows of the default (screen) view.
ROWS = SCREEN_ROWS


class FailOn(click.ParamType):
    """``regression`` or ``regression=PCT``: the threshold (a fraction) of ``--fail-on``."""

    name = "regression[=PCT]"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        word, _, pct = str(value).partition("=")
        if word != "regression":
            self.fail(f"{value!r}: the one condition is 'regression' or 'regression=PCT' "
                      f"(e.g. regression=5 for 5 %)", param, ctx)
        if not pct:
            return 0.0
        try:
            x = float(pct.rstrip("%"))
        except ValueError:
            x = float("nan")
        if not (math.isfinite(x) and x >= 0):
            self.fail(f"{value!r}: PCT must be a percentage >= 0, e.g. regression=5", param,
                      ctx)
        return x / 100


@click.command("diff")
@click.argument("store")
@click.option("--region", required=True, help="Region ID, e.g. matmul/matmul_kernel.")
@click.option("--from", "before", required=True, metavar="VERSION",
              help="Version ID or prefix, run ID (that run only), or KEY=VALUE of --option.")
@click.option("--to", "after", required=True, metavar="VERSION", help="Same forms as --from.")
@click.option("--signal", "signals", multiple=True, help="Signal to compare (repeatable); "
              "default: every signal both versions have.")
@click.option("--min-effect", type=Number(0), default=MIN_EFFECT, show_default=True,
              help="Smallest relative change that may count as significant.")
@click.option("--alpha", type=Number(0, 1, min_open=True, max_open=True), default=ALPHA,
              show_default=True,
              help="Significance level of the Mann-Whitney U test.")
@click.option("--fail-on", "fail_on", type=FailOn(), default=None,
              help="Exit 4 when a signal got significantly worse (its direction: a longer "
                   "duration, more stalls), by at least PCT percent (default: beyond the noise "
                   "floor). For CI jobs that watch kernels.")
@click.option("--all", "all_rows", is_flag=True,
              help=f"Print every signal's row (default: {ROWS} rows, the headline signals and "
                   f"the changed ones first; --json and --csv always have every row).")
@timeout_option
@output_options
@handle_errors
def command(store: str, region: str, before: str, after: str, signals: tuple[str, ...],
            min_effect: float, alpha: float, fail_on: float | None, all_rows: bool,
            timeout_s: float, as_json: bool, as_csv: bool) -> None:
    """Compare REGION between two program versions over repeated launches.

    Prints medians, the ratio to/from with a bootstrap 95 % CI, a Mann-Whitney U p-value and the
    noise floor; "not significant" when the change is within the noise. Refuses (exit 1, with
    rule codes) evidence that is not comparable.

    With --fail-on regression[=PCT] it exits 4 when a significant change in the wrong
    direction (by PCT percent or more) is found, and lists it on stderr.

    \b
    Examples:
      argus diff argus.duckdb --region matmul/matmul_kernel --from variant=naive --to variant=tiled
      argus diff argus.duckdb --region matmul/matmul_kernel --from 593565e8 --to 812dae0b --json
      argus diff ci.duckdb --region matmul/matmul_kernel --from ref=base --to ref=pr \\
        --fail-on regression=2
    """
    from argusdb.answers.ranks import collective_rows

    with connect(store, read_only=True, timeout_s=timeout_s,
                 cpu_time=True) as db:
        result = diff(db, region, before, after, list(signals) or None, min_effect=min_effect,
                      alpha=alpha)
        # Distributed programs: per step and per collective, from timing-clean launches.
        coll = collective_rows(db.store, result.from_ref.program_version,
                               result.to_ref.program_version)
    worse = regressions(result, fail_on) if fail_on is not None else []
    if as_json:
        print_json({**result.to_json(), **({"collectives": coll} if coll else {}),
                    **({"regressions": [r.signal for r in worse]} if fail_on is not None
                       else {})})
        if worse:
            sys.exit(REGRESSION_EXIT)
        return
    if as_csv:
        cols = ["signal", "unit", "standing", "evidence_class", "scope", "from_median",
                "to_median", "ratio", "ci_low", "ci_high", "p_value", "n_from", "n_to",
                "unattributed_share", "sufficiency", "verdict"]
        print_table(cols, [[getattr(r, c) for c in cols] for r in result.rows], as_csv=True)
    else:
        every = result.rows
        cols, rows, right = human_table(result, every if all_rows else screen_rows(every))
        print_table(cols, rows, right=right)
        if len(rows) < len(every):
            same = sum(1 for r in every if r.ratio == 1.0 or r.from_median == r.to_median)
            click.echo(f"+ {len(every) - len(rows):,} more signals (--all or --json: every "
                       f"row); {same:,} of the {len(every):,} signals unchanged")
        click.echo(f"\nregion {region}: {result.from_ref.label} ({result.from_ref.program_version})"
                   f" -> {result.to_ref.label} ({result.to_ref.program_version})", err=True)
        # signals judged alike (same noise floor and cohort) share one line
        alike: dict[str, list[str]] = {}
        for r in every:
            alike.setdefault(f"noise floor {fmt.percent(r.noise_floor)} ({r.noise_source}); "
                             f"{fmt.signature(r.standing)} ({fmt.signature(r.signature)}), "
                             f"{r.evidence_class}, {r.scope}", []).append(r.signal)
        for how, sigs in alike.items():
            named = ", ".join(sigs[:3]) + (f" and {len(sigs) - 3} more" if len(sigs) > 3
                                           else "")
            click.echo(f"{named}: {how}", err=True)
        for n in result.notes:
            click.echo(f"note: {n}", err=True)
    if coll and not as_csv:
        click.echo("\nper step and per collective (timing-clean launches; ratio = to/from):")
        print_step_diff(coll)
    for r in worse:
        click.echo(f"regression: {r.signal} {r.verdict} ({change(r)}, threshold "
                   f"{fmt.percent(fail_on, 0)})", err=True)
    if worse:
        sys.exit(REGRESSION_EXIT)

