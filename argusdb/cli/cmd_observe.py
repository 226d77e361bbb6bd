"""``argus observe SOURCE_FILE --region R --signals S[,S...]``: plan (and on a GPU, run) it."""

from __future__ import annotations

import click

from argusdb.cli.output import handle_errors, print_table
from argusdb.ingest import parse_options
from argusdb.observe import observe, plan_json
from argusdb.planner.scope import parse_pairs


@click.command("observe")
@click.argument("source_file")
@click.option("--region", required=True, help="Region id, e.g. softmax/softmax_fwd/load.")
@click.option("--signals", required=True, help="Comma-separated signals, e.g. duration,"
              "inst_executed,stall_long_sb,dram__bytes_read.sum,exposed_latency.")
@click.option("--scope", "scope", multiple=True, metavar="KEY=VALUE",
              help="Scope coordinate (launch, cta, sm, warp, warp_role, loop_iter) = all | "
                   "each | index | range. Repeatable.")
@click.option("--store", default=None, help="Store to reuse evidence from and write to.")
@click.option("--option", "option", multiple=True, metavar="KEY=VALUE",
              help="Compile option or target that pins the program version (as for ingest).")
@click.option("--dry-run", is_flag=True, help="Only plan; print the tasks (no GPU needed).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def command(source_file: str, region: str, signals: str, scope: tuple[str, ...],
            store: str | None, option: tuple[str, ...], dry_run: bool, as_json: bool) -> None:
    """Observe SIGNALS of REGION in SOURCE_FILE: plan the measurements and, on a GPU, run them.

    With --dry-run --json it prints {"tasks": [{"id", "kind", "depends_on", "run", "why",
    "action", "params", "reuse", "estimate"}]} in topological order.
    """
    obs = observe(region, signals, parse_pairs(scope), store=store, source=source_file,
                  dry_run=dry_run, options=parse_options(option) if option else None)
    for note in obs.plan.notes:
        click.echo(f"note: {note}", err=True)
    if dry_run:
        if as_json:
            click.echo(plan_json(obs.plan))
            return
        click.echo(f"plan {obs.plan.plan_id}: {len(obs.plan.tasks)} tasks", err=True)
        prefix = obs.plan.plan_id + "."
        print_table(["task", "kind", "run", "depends_on", "reuse"],
                    [(t.id.removeprefix(prefix), t.kind, t.run or "",
                      ",".join(d.removeprefix(prefix) for d in t.depends_on),
                      (t.reuse or {}).get("run_id", "")) for t in obs.plan.tasks])
        click.echo("")
        for t in obs.plan.tasks:
            click.echo(f"{t.id.removeprefix(prefix)}: {t.why}")
        return
    if as_json:
        import json

        click.echo(json.dumps({"ok": True, **obs.report}, default=str))
        return
    rep = obs.report
    print_table(["task", "action", "run", "status", "wall_s", "gpu_s"],
                [(t["id"], t["action"], t["run"] or "", t["status"], t["wall_s"], t["gpu_s"])
                 for t in rep["tasks"]])
    click.echo(f"\nevidence: {rep['evidence']}  cost: {rep['wall_s']:.3g} s wall, "
               f"{rep['gpu_s']:.3g} s GPU")
