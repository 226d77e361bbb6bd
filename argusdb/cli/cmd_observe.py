"""``argus observe --region R --signals S[,S...] [...] -- COMMAND [ARGS...]``: plan, run, store.

The harness form ``argus observe KERNEL_FILE --region R --signals S`` (a kernel file with
``KERNEL``/``CONFIGS``/``setup``/``launch``) stays as one more way to provide a launch.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from argusdb.answers import format as fmt
from argusdb.api.surface import parse_options
from argusdb.cli.output import Number, handle_errors, output_options, print_json, print_table
from argusdb.errors import UsageError
from argusdb.observe import observe, plan_json
from argusdb.observe.planner.scope import parse_pairs


def _signals_epilog() -> str:
    """The signals observe can ask for, from the signal vocabulary (``argusdb.schema.signals``)
    so the help and the planner cannot disagree."""
    import textwrap

    from argusdb.schema import signals as s

    def wrapped(title: str, names: list[str]) -> list[str]:
        return [f"  {title}:", *textwrap.wrap(", ".join(names), 86, initial_indent="    ",
                                               subsequent_indent="    ")]

    lines = ["\b", "Signals:", "  duration: a kernel's (clean timing) or a region's (Proton "
             "scopes)", "  exposed_latency: derived from a forced-wait variant and its parent",
             *wrapped("Nsight Compute source page", list(s.SOURCE_SIGNALS)),
             *wrapped("Nsight Compute stall reasons (also NAME_not_issued)",
                      [f"stall_{r}" for r in s.STALL_REASONS]),
             *wrapped("Proton PC sampling (NAME@proton)", list(s.PCS_SIGNALS)),
             "  any Nsight Compute metric BASE.ROLLUP, e.g. dram__bytes_read.sum",
             "", "\b", "Examples:",
             "  argus observe --region fused_norm/layernorm_fwd/load --signals "
             "duration,inst_executed \\",
             "    --dry-run -- python3 model.py",
             "  argus observe kernels/softmax.py --region softmax/softmax_fwd/load "
             "--signals exposed_latency --dry-run"]
    return "\n".join(lines)


@click.command("observe", epilog=_signals_epilog())
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[KERNEL_FILE | -- COMMAND...]")
@click.option("--region", required=True, help="Region id, e.g. softmax/softmax_fwd/load.")
@click.option("--signals", required=True,
              help="Comma-separated signals, e.g. duration,inst_executed (Signals, below, "
                   "lists them).")
@click.option("--scope", "scope", multiple=True, metavar="KEY=VALUE",
              help="Scope coordinate (launch, cta, sm, warp, warp_role, loop_iter) = all | "
                   "each | index | range. Repeatable.")
@click.option("--store", default=None, help="Store to reuse evidence from and write to.")
@click.option("--program", default=None, help="The kernel's module file (default: found by "
              "the region's module name from the command's directory).")
@click.option("--budget-s", "budget_s", type=Number(0, 10**9, min_open=True), default=None,
              metavar="SECONDS",
              help="Trim the plan to this many estimated wall seconds (recorded task costs); "
                   "the notes say which signals were dropped.")
@click.option("--option", "option", multiple=True, metavar="KEY=VALUE",
              help="Compile option or target that pins the program version (as for ingest).")
@click.option("--dry-run", is_flag=True, help="Only plan; print the tasks (no GPU needed).")
@click.option("--no-replay", "no_replay", is_flag=True,
              help="Run the program for every collection instead of once with the others on "
                   "replays of the captured launch.")
@click.option("--rank", "rank", type=click.IntRange(0), default=None,
              help="With a torchrun command: the rank whose launch of the kernel the "
                   "single-process signals measure (default 0; the other ranks run as usual).")
@click.option("--capture-limit", "capture_limit", default=None, metavar="SIZE",
              help="Most bytes the capture of the measured launch may copy (e.g. 512M, 4G; "
                   "default 4G); over it the collections run the program again.")
@output_options(csv=False)
@handle_errors
def command(args: tuple[str, ...], region: str, signals: str, scope: tuple[str, ...],
            store: str | None, program: str | None, budget_s: float | None,
            option: tuple[str, ...], dry_run: bool, no_replay: bool, capture_limit: str | None,
            rank: int | None, as_json: bool) -> None:
    """Observe SIGNALS of REGION in the program COMMAND runs: plan the measurements and, on a
    GPU, run them. COMMAND runs unmodified with argusdb's Triton hooks: once (it finds the
    launch, times the program's launches and captures the measured launch; the other
    collections run on replays of it), or for every collection with --no-replay or where a
    replay cannot stand in (the plan and the report say why).

    With --dry-run --json it prints {"ok": true, "tasks": [{"id", "kind", "depends_on", "run",
    "why", "action", "params", "reuse", "estimate", "runs_program"}], "notes": [...]} in
    topological order. A run exits 1 with "ok": false when any task failed.
    """
    harness = _harness_file(args)
    if not args:
        raise UsageError("nothing to observe: put the command after '--' (argus observe "
                         "--region R --signals S -- python prog.py), or give a harness kernel "
                         "file")
    opts = parse_options(option) if option else None
    # -q: no progress bar and no notes on stderr (None: a bar where stderr is a terminal)
    quiet = click.get_current_context().find_root().meta.get("argus.quiet", False)
    progress = False if quiet else None
    if harness is not None:
        obs = observe(region, signals, parse_pairs(scope), store=store, source=harness,
                      dry_run=dry_run, options=opts, budget_s=budget_s, progress=progress)
    else:
        obs = observe(region, signals, parse_pairs(scope), store=store, source=program,
                      run=list(args), dry_run=dry_run, options=opts, budget_s=budget_s,
                      progress=progress, replay=not no_replay, capture_limit=capture_limit,
                      rank=rank)
    for note in obs.plan.notes if not quiet else []:
        click.echo(f"note: {note}", err=True)
    if dry_run:
        if as_json:
            print_json(json.loads(plan_json(obs.plan)))
            return
        click.echo(f"plan {obs.plan.plan_id}: {len(obs.plan.tasks)} tasks", err=True)
        prefix = obs.plan.plan_id + "."
        # runs_program: the command form's; est. wall: where some task has an estimate
        tasks = obs.plan.tasks
        command = any(t.runs_program is not None for t in tasks)
        costed = any(t.estimate for t in tasks)
        print_table(["task", "kind", "run", *(["runs_program"] if command else []),
                     *(["est. wall"] if costed else []), "depends_on", "reuse"],
                    [(t.id.removeprefix(prefix), t.kind, t.run or "",
                      *([] if not command else
                        ["" if t.runs_program is None else str(t.runs_program).lower()]),
                      *([] if not costed else
                        ["" if not t.estimate else fmt.quantity(t.estimate["wall_s"] or 0,
                                                                "s")]),
                      ",".join(d.removeprefix(prefix) for d in t.depends_on),
                      (t.reuse or {}).get("run_id", "")) for t in tasks])
        click.echo("")
        for t in obs.plan.tasks:
            click.echo(f"{t.id.removeprefix(prefix)}: {t.why}")
        est = obs.report["estimate"]
        if est["estimated"]:
            click.echo(f"\nestimated cost ({'; '.join(est['basis'])}): "
                       f"{est['wall_s']:.3g} s wall, {est['gpu_s']:.3g} s GPU, "
                       f"{est['program_runs']} run(s) of the program"
                       + (f"; no history for {len(est['unknown'])} task(s)"
                          if est["unknown"] else ""))
        return
    rep = obs.report
    if as_json:
        print_json(rep)  # "ok": false when a task failed
        if not rep["ok"]:
            raise SystemExit(1)
        return
    print_table(["task", "action", "run", "status", "wall", "GPU"],
                [(t["id"], t["action"], t["run"] or "", t["status"],
                  fmt.quantity(t["wall_s"], "s"), fmt.quantity(t["gpu_s"], "s"))
                 for t in rep["tasks"]], right=[False, False, False, False, True, True])
    ev = "; ".join(f"{sig} " + ", ".join(f"{n} {cls}" for cls, n in sorted(by.items()))
                   for sig, by in rep["evidence"].items())
    click.echo(f"\nevidence: {ev or 'none'}\ncost: {rep['wall_s']:.3g} s wall, "
               f"{rep['gpu_s']:.3g} s GPU")
    if "distributed" in rep:
        from argusdb.answers.ranks import describe_observation

        for line in describe_observation(rep["distributed"]):
            click.echo(line)
    if "kernel" in rep:
        from argusdb.answers.rank_kernel import describe

        for line in describe(rep["kernel"]):
            click.echo(line)
    for f in rep["failed"]:
        click.echo(f"failed: {f['task']} ({f['action']}, {f['status']}): {f['error']}; "
                   f"evidence stored: {len(f['evidence_stored']['runs'])} run(s)", err=True)
    if not rep["ok"]:
        raise SystemExit(1)


def _harness_file(args: tuple[str, ...]) -> str | None:
    """The one argument of the kernel-file form (a harness kernel: KERNEL, CONFIGS, setup,
    launch); a command is always more than a file name (``-- python prog.py``)."""
    if len(args) != 1 or not args[0].endswith(".py") or not Path(args[0]).is_file():
        return None
    return args[0]
