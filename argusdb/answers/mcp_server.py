"""An MCP server over stdio: the checked query surface and the answers, as tools for agents.

Tools (each opens the store for the call only, so ingests can run between calls):

- ``query(sql, max_rows)``: a checked query's answer (refusals carry the checker's rule codes);
- ``check(sql)``: the checker's findings without running anything;
- ``explain(sql)``: the provenance an answer would rest on;
- ``report(region, versions, signals, max_entropy_bits)``: the agent report of a region;
- ``diff(region, from_version, to_version, signals)``: a region-keyed diff across versions;
- ``trajectory(versions, regions, signals)``: regions along an ordered series of versions;
- ``observe_plan(region, signals, source, scope, options)``: the measurement plan (a DAG of
  control / transform / collect / synthesize tasks, with why each run is separate and which
  stored runs it reuses) that ``argus observe`` would run; a dry run, nothing executes.

Every failure comes back as a tool error whose text is the CLI's JSON envelope
``{"ok": false, "errors": [{"code", "message", ...}]}``, so agents see the same rule codes. A
question without evidence (a query naming a region with no stored evidence of the signal, a
report of a signal none measured) is such an error with code ``E300`` and ``requests``: the
``argus observe`` commands that would produce the evidence. Report, diff and trajectory
outputs carry ``unattributed_share`` and ``gaps`` with their "insufficient" verdicts.

Example:
    $ argus mcp argus.duckdb      # then connect an MCP client over stdio
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

from argusdb.answers.diff import diff as _diff
from argusdb.answers.report import MAX_ENTROPY_BITS
from argusdb.answers.report import report as _report
from argusdb.answers.sufficiency import empty_answer
from argusdb.answers.trajectory import trajectory as _trajectory
from argusdb.api import Connection, connect
from argusdb.errors import ArgusError

#: Rows a query tool returns at most (the answer says when it cut).
MAX_ROWS = 1000


def _result(doc: dict[str, Any], error: bool = False) -> CallToolResult:
    """The JSON document as text and as structured content (same content both ways)."""
    data = json.loads(json.dumps(doc, default=str))
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data))],
                          structured_content=data, is_error=error)


def _answer(store: str, fn: Callable[[Connection], dict[str, Any]]) -> CallToolResult:
    """Open the store for one call and answer; argusdb errors become the JSON error envelope."""
    try:
        with connect(store) as conn:
            return _result(fn(conn))
    except ArgusError as exc:
        findings = getattr(exc, "findings", None)
        errors = [f.to_json() for f in findings] if findings else [exc.to_json()]
        return _result({"ok": False, "errors": errors}, error=True)


def build_server(store: str) -> MCPServer:
    """An MCP server whose tools answer from the store file ``store``."""
    server = MCPServer("argusdb", instructions=(
        "Evidence database for GPU performance measurement. Ask checked SQL over the "
        "'evidence' view (keys: program_version, run_id, region_id, signal, evidence_class); "
        "compare versions with 'diff', follow regions with 'trajectory', and get per-claim "
        "verdicts with 'report'. Refusals carry stable rule codes and a remedy."))

    @server.tool()
    def query(sql: str, max_rows: int = MAX_ROWS) -> CallToolResult:
        """Run a checked, read-only SQL query; returns columns and rows (at most max_rows)."""
        def run(c: Connection) -> dict[str, Any]:
            table = c.query(sql)
            if (gap := empty_answer(c, sql, table)) is not None:
                raise gap  # no evidence: the error names the observe request that would
            rows = table.slice(0, max_rows).to_pylist()
            return {"ok": True, "columns": table.column_names,
                    "rows": [list(r.values()) for r in rows], "row_count": table.num_rows,
                    "truncated": table.num_rows > max_rows}
        return _answer(store, run)

    @server.tool()
    def check(sql: str) -> CallToolResult:
        """The checker's findings for a query (an empty list means it may run)."""
        def run(c: Connection) -> dict[str, Any]:
            findings = c.check(sql)
            return {"ok": not findings, "findings": [f.to_json() for f in findings]}
        return _answer(store, run)

    @server.tool()
    def explain(sql: str) -> CallToolResult:
        """The provenance a query's answer would rest on (versions, runs, classes)."""
        return _answer(store, lambda c: dict(c.explain(sql)))

    @server.tool()
    def report(region: str, versions: list[str] | None = None,
               signals: list[str] | None = None,
               max_entropy_bits: float = MAX_ENTROPY_BITS) -> CallToolResult:
        """Per-claim report of a region: value, evidence class, provenance, ambiguity notes,
        repeat statistics and a verdict (sufficient / insufficient)."""
        return _answer(store, lambda c: _report(c, region, versions, signals=signals,
                                                max_entropy_bits=max_entropy_bits).to_json())

    @server.tool()
    def diff(region: str, from_version: str, to_version: str,
             signals: list[str] | None = None) -> CallToolResult:
        """Compare a region between two versions: medians, ratio with bootstrap CI,
        Mann-Whitney p, noise floor, significant or not. Versions: ID/prefix, run ID, or
        KEY=VALUE of their --option values."""
        return _answer(store, lambda c: _diff(c, region, from_version, to_version,
                                              signals).to_json())

    @server.tool()
    def trajectory(versions: list[str], regions: list[str] | None = None,
                   signals: list[str] | None = None) -> CallToolResult:
        """Each region's medians (with CIs) along an ordered series of versions."""
        return _answer(store, lambda c: _trajectory(c, regions, list(versions),
                                                    signals).to_json())

    @server.tool()
    def observe_plan(region: str, signals: list[str], source: str,
                     scope: dict[str, str] | None = None,
                     options: dict[str, str] | None = None) -> CallToolResult:
        """Plan (dry run) the measurements that would observe signals of a region: tasks,
        runs kept apart by interference, reuse of stored evidence. source: the Triton source
        file of the region's program, as a path on the server's machine."""
        from argusdb.observe import observe

        def run(_: Connection) -> dict[str, Any]:
            obs = observe(region, signals, scope, store=store, source=source, dry_run=True,
                          options=options)
            return {"ok": True, "plan": obs.plan.to_json(), "summary": obs.report}
        return _answer(store, run)

    return server


def serve(store: str) -> None:
    """Serve the store over stdio until the client closes the connection."""
    build_server(store).run("stdio")
