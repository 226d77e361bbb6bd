"""AR08 sandbox.statement: one read-only SELECT, nothing else."""

from __future__ import annotations

from sqlglot import exp

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding

#: Statement kinds that change the store, its configuration or the session.
_FORBIDDEN: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Copy,
    exp.Set, exp.Pragma, exp.Command, exp.Attach, exp.Detach, exp.Use, exp.Into, exp.Install,
    exp.Transaction, exp.Commit, exp.Rollback, exp.Describe, exp.Summarize, exp.TruncateTable,
    exp.Analyze, exp.LoadData, exp.Cache, exp.Uncache, exp.Refresh, exp.Grant,
)


class SandboxStatement(Rule):
    """Only one read-only SELECT reaches the engine: no DDL or DML (CREATE, INSERT, UPDATE,
    DELETE, DROP, ALTER, CREATE MACRO, SELECT INTO), no PRAGMA, SET, ATTACH/DETACH, USE, COPY,
    INSTALL/LOAD, EXPORT/IMPORT, CALL, CHECKPOINT, VACUUM or transaction control, and never
    more than one statement, and no time travel inside the query (``FROM run AT (VERSION =>
    1)``): the whole question is asked of one snapshot, the one the checker judges it against
    (``--as-of``). Schema discovery is answered, not refused: ``DESCRIBE <table>``,
    ``SHOW TABLES`` and ``information_schema`` become SELECTs over the documented catalog, and
    ``PIVOT`` is checked as its grouped SELECT (:mod:`argusdb.checker.statements`).

    Anti-pattern::

        SELECT 1; DROP TABLE run
        COPY (SELECT * FROM evidence) TO 'out.csv'

    Best practice::

        SELECT * FROM evidence WHERE run_id = '647424f6cb8b6a41'
        -- and export with the CLI: argus query STORE "..." --csv > out.csv
    """

    code = "AR08"
    name = "sandbox.statement"
    phase = "sandbox"

    def check(self, ctx: Context) -> list[Finding]:
        stmts = ctx.statements or [ctx.statement]
        out: list[Finding] = []
        if len(stmts) > 1:
            f = self.finding(ctx, stmts[1], f"the text holds {len(stmts)} statements; only one "
                             f"SELECT runs", "send one SELECT statement (no ';' between "
                             "statements)")
            out.append(_at_statement_start(ctx.sql, f))
        for s in stmts:
            nodes = ctx.nodes() if len(stmts) == 1 else s.walk()
            bad = s if not isinstance(s, exp.Query) else next(
                (n for n in nodes if isinstance(n, _FORBIDDEN)), None)
            if isinstance(bad, exp.Pivot):
                out.append(self.finding(
                    ctx, bad, "this PIVOT/UNPIVOT form is not supported (PIVOT ... ON ... "
                    "USING ... is)", "write it as PIVOT src ON col USING agg(value) GROUP BY "
                    "..., or as a SELECT with max(value) FILTER (WHERE signal = '...') per "
                    "column", statement="PIVOT"))
            elif bad is None and isinstance(s, exp.Query) and (travel := next(
                    (n for n in nodes if isinstance(n, exp.HistoricalData)), None)) is not None:
                out.append(self.finding(
                    ctx, travel.parent, f"{travel.sql(dialect='duckdb')} reads another snapshot "
                    f"of the store than the one the checker judges the query against",
                    "ask the whole question as the store stood then: argus query STORE SQL "
                    f"--as-of {_snapshot(travel)} (argusdb.connect(path, "
                    "as_of=...)), without AT (...) in the query", statement="AT"))
            elif bad is not None:
                out.append(self.finding(
                    ctx, bad, f"{_kind(bad)} is not allowed: queries are read-only",
                    "ask a SELECT question over the evidence views; the store is written only "
                    "by argus ingest/observe", statement=_kind(bad)))
        return out


def _at_statement_start(sql: str, f: Finding) -> Finding:
    # sqlglot keeps no position for a statement keyword: point after the ';' before it.
    lines = sql.split("\n")
    if not f.line:
        return f
    offset = sum(len(x) + 1 for x in lines[:f.line - 1]) + f.col - 1
    semi = sql.rfind(";", 0, offset)
    if semi < 0:
        return f
    start = semi + 1
    while start < len(sql) and sql[start].isspace():
        start += 1
    f.line = sql.count("\n", 0, start) + 1
    f.col = start - (sql.rfind("\n", 0, start) + 1) + 1
    return f


def _snapshot(travel: exp.Expression) -> str:
    """The snapshot an ``AT (VERSION => n)`` clause names, as ``--as-of`` takes it."""
    when = travel.expression
    return str(when.this) if isinstance(when, exp.Literal) else when.sql(dialect="duckdb")


def _kind(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Create):
        return f"CREATE {str(node.args.get('kind') or '').upper()}".strip()
    if isinstance(node, exp.Into):
        return "SELECT INTO"
    if isinstance(node, exp.Select | exp.Query):
        return "this statement"
    return type(node).__name__.upper()
