"""``argus query STORE "SQL"``: answer a checked question."""

from __future__ import annotations

import click

from argusdb.api import connect
from argusdb.cli.output import (
    Seconds,
    handle_errors,
    hard_time_limit,
    output_options,
    print_table,
    sql_command,
    sql_text,
)

#: Rows printed unless --limit says otherwise.
DEFAULT_LIMIT = 10_000


@sql_command("query")
@click.option("--timeout", "timeout_s", type=Seconds(), default=30.0, show_default=True,
              help="Stop the query after this many seconds (a positive number).")
@click.option("--limit", type=click.IntRange(min=0), default=DEFAULT_LIMIT,
              show_default=True, help="Print at most this many rows (the answer says when "
              "it was cut).")
@click.option("--as-of", "as_of", metavar="SNAPSHOT|TIME",
              help="Answer as the store stood at this snapshot ('argus runs --snapshots') or "
                   "ISO time (UTC), attribution included.")
@output_options
@handle_errors
def command(store: str, sql: str, timeout_s: float, limit: int, as_json: bool,
            as_csv: bool, as_of: str | None = None) -> None:
    """Check SQL against the compatibility rules, then run it read-only over STORE.

    SQL may start with a comment ('-- why'), or be '-' to read it from stdin; 'argus query
    STORE -- SQL' also works. The answer is streamed and cut at --limit rows (and 256 MiB);
    --json then says "truncated". --json adds the constructs and acknowledgements the query
    used. Exit codes: 0 answered, 1 refused by the checks (each error has code, message,
    line, col, remedy), 2 usage or input error, or the time limit, 3 no evidence (the query
    names a region with no stored evidence of the signal: the error gives the 'argus observe'
    request that would produce it).

    Example: argus query argus.duckdb "SELECT * FROM version_diff('duration', 'A', 'B')"
    """
    text = sql_text(sql)
    with hard_time_limit(timeout_s, as_json), \
            connect(store, read_only=True, timeout_s=timeout_s, as_of=as_of) as db:
        answer, prov = db.query_rows(text, limit=limit)
        if answer.num_rows <= 1 and not any(v is not None for r in answer.rows for v in r):
            # empty, or one row of NULLs: say so when the store has no evidence of the region
            # it names (with the observe request); only such answers load Arrow and sqlglot
            import pyarrow as pa

            from argusdb.answers.sufficiency import empty_answer

            table = pa.Table.from_pylist([dict(zip(answer.columns, r, strict=True))
                                          for r in answer.rows])
            if (gap := empty_answer(db, text, table)) is not None:
                raise gap
    extra = {k: prov[k] for k in ("constructs", "acknowledgements") if prov[k]}
    if prov["truncated"]:
        extra["truncated"] = prov["truncated"]
        click.echo(f"note: {prov['truncated']}; printed the first {answer.num_rows:,} "
                   f"(raise --limit, or aggregate)", err=True)
    print_table(answer.columns, answer.rows, as_json, as_csv, extra=extra)
