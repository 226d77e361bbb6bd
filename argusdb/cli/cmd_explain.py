"""``argus explain STORE "SQL"``: the provenance an answer would rest on."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import (
    print_json,
    sql_command,
    sql_text,
)
from argusdb.schema.signature import readable
from argusdb.schema.sqltext import literal


@sql_command("explain", document=True)
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
                    "interference_signatures", "replay_passes", "scopes"):
            click.echo(f"{key}: {_listed(prov[key], key)}")
        click.echo(f"rows: {prov['rows']:,}")
        for s in prov["sources"]:
            click.echo(f"source {s['alias']} ({s['relation']}): where "
                       f"{' AND '.join(s['predicates']) or 'true'}: {s['rows']:,} rows, "
                       f"versions {_listed(s['program_versions'])}, runs {_listed(s['runs'])}")
        for c in prov["constructs"]:
            args = ", ".join(literal(a) if isinstance(a, str) else str(a) for a in c["args"])
            click.echo(f"construct {c['construct']}({args}) at line {c['line']}, "
                       f"col {c['col']}")
        for a in prov["acknowledgements"]:
            click.echo(f"acknowledges {a['acknowledges']} ({a['rule']})")
        for f in prov["findings"]:
            click.echo(f"refused: {f['code']} {f['name']}: {f['message']}")
            if f["remedy"]:
                click.echo(f"  remedy: {f['remedy']}")
    if not prov["ok"]:
        raise SystemExit(1)


def _listed(values: list[object], key: str = "") -> str:
    """A provenance list for reading: comma-separated, signatures readable, 'none' if empty."""
    shown = [readable(str(v)) if key == "interference_signatures" else str(v) for v in values]
    return ", ".join(shown) or "none"
