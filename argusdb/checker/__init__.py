"""The checked query language: a pure check, then execution read-only.

Pipeline (one module each, as sqlglot lays out its own)::

    parse.py       SQL text → sqlglot tree (DuckDB dialect); positions from tokens
    rules/ (sandbox phase)   refuse anything but one read-only SELECT over the store, and
                   any function the catalogue (functions.csv) does not allow
    resolve.py / analysis.py names against the catalog; evidence streams and the
                   combinations they meet in, from a Metadata (metadata.py: a Protocol;
                   the store's implementation is argusdb/api/metadata.py)
    rules/ (names, compat phases)  one module per rule, stable codes AR01…
    execute()      the SQL generated from the checked tree, on a locked-down cursor

:func:`analyse` is a pure function of the text, the catalog and a Metadata: it never writes
and never runs the query; given a Store it asks the store's metadata (kept on the Store).

Evidence-aware constructs (``version_diff``, ``evidence_accepting``) are table macros of
``argusdb/queries/checked.sql``; :mod:`argusdb.checker.constructs` says what they mean to the
checker.

Example:
    >>> from argusdb.store.embedded import Store
    >>> with Store.open("argus.duckdb", read_only=True) as store:
    ...     report = analyse("SELECT median(value) FROM evidence", store)
    >>> [f.code for f in report.findings][:1]
    ['AR01']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
from sqlglot import exp

from argusdb.checker import statements
from argusdb.checker.analysis import analyse as _analyse
from argusdb.checker.context import Context, Props
from argusdb.checker.metadata import MemoryMetadata, Metadata
from argusdb.checker.parse import parse
from argusdb.checker.rules import PHASES, all_rules
from argusdb.errors import Finding, QueryFailed, QueryRefused
from argusdb.store.embedded import Store

__all__ = ["MemoryMetadata", "Metadata", "Report", "analyse", "check", "execute", "explain",
           "metadata_of", "refresh_metadata"]

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


def metadata_of(source: Store | Metadata | None) -> Metadata | None:
    """The Metadata of a store (kept on the Store object), or ``source`` itself."""
    if isinstance(source, Store):
        from argusdb.api.metadata import StoreMetadata  # api imports the checker

        return StoreMetadata.of(source)
    return source


def analyse(sql: str, store: Store | Metadata | None = None) -> Report:
    """Parse and check ``sql`` against a store or any :class:`Metadata`; with none only the
    static rules (sandbox, names) run.

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
        meta = metadata_of(store)
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


def check(sql: str, store: Store | Metadata | None = None) -> list[Finding]:
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


def refresh_metadata(store: Store, runs: list[str] | None = None) -> str:
    """Bring the store's metadata summary of ``evidence`` up to date after an ingest (a write
    path; checks never write), so later connections need not rebuild it in memory. With
    ``runs`` (the runs just ingested) only their rows are summarised again."""
    from argusdb.api.metadata import refresh  # api imports the checker

    return refresh(store, runs)


def explain(sql: str, store: Store) -> dict[str, Any]:
    """Provenance of the answer ``sql`` would get: versions, runs, tasks, classes, signatures,
    passes, scopes, per source and in total, with constructs, acknowledgements and findings."""
    return analyse(sql, store).provenance()
