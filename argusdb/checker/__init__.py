"""The checked query language: parse, check, then execute read-only.

Pipeline (one module each, as sqlglot lays out its own)::

    parse.py       SQL text → sqlglot tree (DuckDB dialect); positions from tokens
    rules/ (sandbox phase)   refuse anything but one read-only SELECT over the store
    resolve.py / analysis.py names against the catalog; evidence streams and the
                   combinations they meet in, with the store's metadata (provenance.py)
    rules/ (names, compat phases)  one module per rule, stable codes AR01…
    execute()      the SQL generated from the checked tree, on a locked-down cursor

Evidence-aware constructs (``version_diff``, ``evidence_accepting``) are table macros of
``queries/checked.sql``; :mod:`argusdb.checker.constructs` says what they mean to the checker.

Example:
    >>> report = analyse("SELECT median(value) FROM evidence", store)
    >>> [f.code for f in report.findings]
    ['AR01']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from argusdb.checker.analysis import analyse as _analyse
from argusdb.checker.context import Context, Props
from argusdb.checker.parse import parse
from argusdb.checker.provenance import Metadata
from argusdb.checker.rules import PHASES, all_rules
from argusdb.errors import Finding, QueryFailed, QueryRefused
from argusdb.store import Store

__all__ = ["Report", "analyse", "check", "execute", "explain", "refresh_metadata"]

#: Default limits of one user query.
TIMEOUT_S = 30.0


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

    @property
    def executable(self) -> str:
        """The SQL generated from the checked tree: what :func:`execute` runs."""
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


def analyse(sql: str, store: Store | None = None) -> Report:
    """Parse and check ``sql``; with no store only the static rules (sandbox, names) run.

    Never raises on bad input: every problem is a finding. A checker failure on input it
    cannot analyse refuses the query (AR99) rather than letting it run unchecked.
    """
    parsed, findings = parse(sql)
    report = Report(sql if isinstance(sql, str) else repr(sql), findings)
    if parsed is None:
        return report
    ctx = Context(sql, parsed.statements[0], statements=parsed.statements)
    report.context = ctx
    try:
        report.findings = _run_phase("sandbox", ctx)
        if report.findings:
            return report
        meta = Metadata.of(store) if store is not None else None
        full = _analyse(sql, ctx.statement, meta)
        full.statements = ctx.statements
        report.context = full
        for phase in PHASES[1:]:
            report.findings = _run_phase(phase, full)
            if report.findings:
                return report
        report.statement = ctx.statement
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


def check(sql: str, store: Store | None = None) -> list[Finding]:
    """Findings for ``sql``; an empty list means it may run."""
    return analyse(sql, store).findings


def execute(sql: str, store: Store, timeout_s: float = TIMEOUT_S) -> pa.Table:
    """Check ``sql`` and run it read-only; raises QueryRefused with the findings if refused."""
    table, _ = execute_report(sql, store, timeout_s)
    return table


def execute_report(sql: str, store: Store, timeout_s: float = TIMEOUT_S
                   ) -> tuple[pa.Table, Report]:
    """Like :func:`execute`, also returning the report (provenance, constructs)."""
    report = analyse(sql, store)
    if not report.ok:
        raise QueryRefused(report.findings)
    return store.run_select(report.executable, timeout_s), report


def refresh_metadata(store: Store) -> None:
    """Bring the checker's metadata summary of ``evidence`` up to date (after an ingest), so
    the next read-only connection does not have to rebuild it in memory."""
    if not store.read_only:
        Metadata.of(store).summary("evidence")


def explain(sql: str, store: Store) -> dict[str, Any]:
    """Provenance of the answer ``sql`` would get: versions, runs, tasks, classes, signatures,
    passes, scopes, per source and in total, with constructs, acknowledgements and findings."""
    return analyse(sql, store).provenance()
