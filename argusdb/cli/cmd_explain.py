"""``argus explain STORE "SQL"``: the provenance an answer would rest on."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import (
    SQL_COMMAND,
    handle_errors,
    output_options,
    print_json,
    sql_text,
    timeout_option,
)


@click.command("explain", context_settings=SQL_COMMAND)
@click.argument("store")
@click.argument("sql")
@timeout_option
@output_options(csv=False)
@handle_errors
def command(store: str, sql: str, timeout_s: float, as_json: bool) -> None:
    """Show which program versions, runs, tasks, evidence classes, interference signatures,
    replay passes and scopes the answer to SQL would rest on, per source, with the constructs
    and acknowledgements it uses and the findings if it would be refused. Exit 0 always
    (1 only if it would be refused, so scripts can gate on it).

    Example: argus explain argus.duckdb "SELECT * FROM version_diff('duration', 'A', 'B')"
    """
    text = sql_text(sql)
    with connect(store, read_only=True, timeout_s=timeout_s) as db:
        prov = db.explain(text)
    if as_json:
        print_json(prov)  # "ok": false when it would be refused
    else:
        for key in ("program_versions", "runs", "tasks", "evidence_classes",
                    "interference_signatures", "replay_passes", "scopes", "rows"):
            click.echo(f"{key}: {prov[key]}")
        for s in prov["sources"]:
            click.echo(f"source {s['alias']} ({s['relation']}): where "
                       f"{' AND '.join(s['predicates']) or 'true'}: {s['rows']} rows, versions "
                       f"{s['program_versions']}, runs {s['runs']}")
        for c in prov["constructs"]:
            click.echo(f"construct {c['construct']}{tuple(c['args'])} at line {c['line']}, "
                       f"col {c['col']}")
        for a in prov["acknowledgements"]:
            click.echo(f"acknowledges {a['acknowledges']} ({a['rule']})")
        for f in prov["findings"]:
            click.echo(f"refused: {f['code']} {f['name']}: {f['message']}")
            if f["remedy"]:
                click.echo(f"  remedy: {f['remedy']}")
    if not prov["ok"]:
        raise SystemExit(1)
