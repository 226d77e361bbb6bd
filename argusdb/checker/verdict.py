"""The checker's verdict on one query: :func:`analyse` (parse, then every rule, phase by
phase) and its :class:`Report`; :mod:`argusdb.checker` exports them (see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlglot import exp

from argusdb.checker import statements
from argusdb.checker.analysis import analyse as _analyse
from argusdb.checker.context import Context, Props
from argusdb.checker.metadata import Metadata
from argusdb.checker.parse import parse
from argusdb.checker.rules import PHASES, all_rules
from argusdb.errors import Finding, QueryFailed


@dataclass
class Report:
    """What the checker found out about one query.

    Attributes:
        sql: the query text as given.
        findings: refusals; empty when the query may run.
        context: the analysis (streams, combinations, constructs); None if it did not parse.
        statement: the checked tree, once every rule passed.
    """

    sql: str
    findings: list[Finding] = field(default_factory=list)
    context: Context | None = None
    statement: Any = None

    @cached_property
    def executable(self) -> str:
        """The SQL generated from the checked tree: what :func:`execute` runs (generated once:
        the tree is final when the report is)."""
        return self.statement.sql(dialect="duckdb") if self.statement is not None else ""

    @property
    def ok(self) -> bool:
        return not self.findings

    def provenance(self) -> dict[str, Any]:
        """The provenance the answer rests on, as JSON-ready data."""
        ctx = self.context
        total = Props()
        streams = []
        for s in ctx.streams if ctx else []:
            if s.base:
                total = total.merge(s.props)
                streams.append({"alias": s.alias, "relation": s.relation,
                                "predicates": [p.sql() for p in s.predicates],
                                **s.props.to_json()})
        return {"sql": self.sql, "ok": self.ok, "executed_sql": self.executable,
                **total.to_json(),
                "sources": streams,
                "constructs": ctx.constructs if ctx else [],
                "acknowledgements": ctx.acknowledgements if ctx else [],
                "findings": [f.to_json() for f in self.findings]}


def analyse(sql: str, meta: Metadata | None = None) -> Report:
    """Parse and check ``sql`` against a :class:`Metadata`; with none only the static rules
    (sandbox, names) run.

    Never raises on bad input: every problem is a finding. A checker failure on input it
    cannot analyse refuses the query (AR99) rather than letting it run unchecked.
    """
    parsed, findings = parse(sql)
    report = Report(sql if isinstance(sql, str) else repr(sql), findings)
    if parsed is None:
        return report
    stmts = parsed.statements
    rewritten = statements.rewrite(stmts[0]) if len(stmts) == 1 else None
    checked, run = rewritten if rewritten else (stmts[0], stmts[0])
    ctx = Context(sql, checked, statements=[checked] if rewritten else stmts)
    report.context = ctx
    try:
        report.findings = _run_phase("sandbox", ctx)
        if report.findings:
            return report
        full = _analyse(sql, ctx.statement, meta)
        full.statements = ctx.statements
        report.context = full
        for phase in PHASES[1:]:
            report.findings = _run_phase(phase, full)
            if report.findings:
                return report
        if isinstance(run, exp.Pivot):
            filled = statements.pivot_values(run, meta.values) if meta is not None else None
            if filled is None:
                report.findings = [Finding(
                    "AR08", "sandbox.statement", "the PIVOT's ON values cannot be listed "
                    "(no store, or none or too many distinct values)",
                    "list them: PIVOT ... ON signal IN ('duration', 'inst_executed') ...")]
                return report
            run = filled
        report.statement = run
    except QueryFailed as exc:
        report.findings = [Finding("AR00", "query.invalid",
                                   f"the store cannot evaluate this query's predicates: "
                                   f"{exc.problem}", exc.fix)]
    except Exception as exc:  # fail closed: an unanalysable query never runs
        report.findings = [Finding("AR99", "checker.internal",
                                   f"the checker could not analyse this query "
                                   f"({type(exc).__name__}: {str(exc)[:200]}), so it is refused",
                                   "simplify the query (CTEs, fewer nesting levels) and report "
                                   "it as an argusdb bug")]
    return report


def _run_phase(phase: str, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for rule in all_rules():
        if rule.phase == phase:
            out.extend(rule.check(ctx))
    return sorted(out, key=lambda f: (f.line, f.col, f.code))
