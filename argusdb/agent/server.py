"""An MCP server over stdio: the checked query surface and the answers, as tools for agents.

Tools:

- ``query(sql, max_rows)``: a checked query's answer (refusals carry the checker's rule codes);
- ``check(sql)``: the checker's findings without running anything;
- ``explain(sql)``: the provenance an answer would rest on;
- ``report(region, versions, signals, max_entropy_bits)``: the agent report of a region;
- ``diff(region, from_version, to_version, signals)``: a region-keyed diff across versions;
- ``trajectory(versions, regions, signals)``: regions along an ordered series of versions;
- ``observe_plan(region, signals, source, scope, options)``: the measurement plan (a DAG of
  control / transform / collect / synthesize tasks, with why each run is separate and which
  stored runs it reuses) that ``argus observe`` would run; a dry run, nothing executes.
  ``source`` must be a ``.py`` file under the server's source roots (``--source-root``).

Every call is answered by one long-lived worker process holding one read-only connection
(:mod:`argusdb.agent.worker`: bounds on time, memory and threads per call). Every failure
comes back as a tool error whose text is the CLI's JSON envelope
``{"ok": false, "errors": [{"code", "message", ...}]}``, so agents see the same rule codes;
arguments of the wrong type get that envelope too (code ``E001``). A line on stdin that is not
UTF-8 or not JSON gets JSON-RPC's ``-32700``, one that is not a JSON-RPC 2.0 message
``-32600``, and text that is not valid Unicode (a lone surrogate) ``-32602``.
A question without evidence (a query naming a region with no stored evidence of the signal, a
report of a signal none measured) is such an error with code ``E300`` and ``requests``: the
``argus observe`` commands that would produce the evidence. Report, diff and trajectory
outputs carry ``unattributed_share`` and ``gaps`` with their "insufficient" verdicts.

Example:
    $ argus mcp argus.duckdb --source-root .   # then connect an MCP client over stdio
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

from argusdb.agent.worker import Limits, Worker, _envelope
from argusdb.answers import MAX_ENTROPY_BITS
from argusdb.answers.wire import dumps
from argusdb.errors import UsageError

#: Rows a query tool returns unless asked (the answer says when it cut).
MAX_ROWS = 1000
#: Largest JSON-RPC message read from stdin (a longer line is refused, not buffered).
MAX_MESSAGE_BYTES = 4 * 2**20


def _result(doc: dict[str, Any], error: bool = False,
            redactions: Sequence[tuple[str, str]] = ()) -> CallToolResult:
    """The JSON document as text and as structured content (same content both ways); an
    error's text has the server's own paths replaced (:func:`_redact`)."""
    if error:
        doc = _redact(doc, redactions)
    return CallToolResult(content=[TextContent(type="text", text=dumps(doc))],
                          structured_content=doc, is_error=error)


def _redactions(store: str, roots: Sequence[str]) -> list[tuple[str, str]]:
    """What an error sent to a client must not show, longest first: the source roots, the
    store's folder and the server's home folder (a client sees only names)."""
    out = [(r, f"<source root {Path(r).name}>") for r in roots]
    folder = str(Path(store).resolve().parent)
    out += [(folder, "<store folder>")] if folder != "/" else []
    home = os.path.expanduser("~")
    out += [(home, "~")] if home not in ("", "/", "~") else []
    return sorted(out, key=lambda kv: -len(kv[0]))


def _redact(value: Any, redactions: Sequence[tuple[str, str]]) -> Any:
    """``value`` (JSON) with every string's server paths replaced."""
    if isinstance(value, str):
        for path, name in redactions:
            value = value.replace(path, name)
        return value
    if isinstance(value, dict):
        return {k: _redact(v, redactions) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, redactions) for v in value]
    return value


class _Server(MCPServer):
    """MCPServer whose argument errors are the CLI's envelope, not validation text."""

    #: Server paths an error must not show (see :func:`_redactions`).
    redactions: Sequence[tuple[str, str]] = ()

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                bad = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                for e in cause.errors(include_input=False))
                err = UsageError(f"{name}: invalid arguments ({bad}); see the tool's input "
                                 f"schema")
            elif name not in {t.name for t in await self.list_tools()}:
                err = UsageError(f"no tool named {name!r}; tools: query, check, explain, "
                                 f"report, diff, trajectory, observe_plan")
            else:
                return _result(_envelope(exc), error=True, redactions=self.redactions)
            return _result(_envelope(err), error=True, redactions=self.redactions)


def build_server(store: str, source_roots: list[str | Path] | None = None,
                 timeout_s: float = 30.0) -> tuple[MCPServer, Worker]:
    """An MCP server whose tools answer from the store file ``store``, and its worker.

    Args:
        store: the store file (opened read-only by the worker).
        source_roots: folders ``observe_plan`` may read sources from (default: none).
        timeout_s: time limit of one call.
    """
    roots = [str(Path(r).resolve()) for r in source_roots or []]
    worker = Worker(store, Limits(timeout_s=timeout_s, roots=roots))
    server = _Server("argusdb", instructions=(
        "Evidence database for GPU performance measurement. Ask checked SQL over the "
        "'evidence' view (keys: program_version, run_id, region_id, signal, evidence_class); "
        "compare versions with 'diff', follow regions with 'trajectory', and get per-claim "
        "verdicts with 'report'. Refusals carry stable rule codes and a remedy."))
    server.redactions = _redactions(store, roots)

    def answer(tool: str, **args: Any) -> CallToolResult:
        # One call at a time, on the event loop: the worker is one process, and no thread
        # is made per call.
        doc, error = worker.call(tool, args)
        return _result(doc, error, server.redactions)

    @server.tool()
    async def query(sql: str, max_rows: int = MAX_ROWS) -> CallToolResult:
        """Run a checked, read-only SQL query; returns columns and rows (at most max_rows,
        and at most 10,000; 'truncated' says why an answer was cut)."""
        return answer("query", sql=sql, max_rows=max_rows)

    @server.tool()
    async def check(sql: str) -> CallToolResult:
        """The checker's findings for a query (an empty list means it may run)."""
        return answer("check", sql=sql)

    @server.tool()
    async def explain(sql: str) -> CallToolResult:
        """The provenance a query's answer would rest on (versions, runs, classes)."""
        return answer("explain", sql=sql)

    @server.tool()
    async def report(region: str, versions: list[str] | None = None,
                     signals: list[str] | None = None,
                     max_entropy_bits: float = MAX_ENTROPY_BITS) -> CallToolResult:
        """Per-claim report of a region: value, evidence class, provenance, ambiguity notes,
        repeat statistics and a verdict (sufficient / insufficient)."""
        return answer("report", region=region, versions=versions, signals=signals,
                      max_entropy_bits=max_entropy_bits)

    @server.tool()
    async def diff(region: str, from_version: str, to_version: str,
                   signals: list[str] | None = None) -> CallToolResult:
        """Compare a region between two versions: medians, ratio with bootstrap CI,
        Mann-Whitney p, noise floor, significant or not. Versions: ID/prefix, run ID, or
        KEY=VALUE of their --option values."""
        return answer("diff", region=region, from_version=from_version,
                      to_version=to_version, signals=signals)

    @server.tool()
    async def trajectory(versions: list[str], regions: list[str] | None = None,
                         signals: list[str] | None = None) -> CallToolResult:
        """Each region's medians (with CIs) along an ordered series of versions."""
        return answer("trajectory", versions=versions, regions=regions, signals=signals)

    @server.tool()
    async def observe_plan(region: str, signals: list[str] | str, source: str,
                           scope: dict[str, str] | None = None,
                           options: dict[str, str] | None = None) -> CallToolResult:
        """Plan (dry run) the measurements that would observe signals of a region: tasks,
        runs kept apart by interference, reuse of stored evidence. signals: a list, or
        comma-separated text as the CLI takes it ("duration,inst_executed"). source: the
        Triton source file of the region's program: a .py file under the server's source
        roots."""
        return answer("observe_plan", region=region, signals=signals, source=source,
                      scope=scope, options=options)

    return server, worker


# -- the wire ---------------------------------------------------------------------------------
def _refusal(line: bytes) -> tuple[int, str, Any] | None:
    """The JSON-RPC error (code, message, id) a line from stdin gets, or None when it is a
    well-formed message for the MCP library."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return types.PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start + 1})", None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return types.PARSE_ERROR, f"Parse error: not JSON ({str(exc)[:80]})", None
    rid = doc.get("id") if isinstance(doc, dict) else None
    rid = rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None
    if isinstance(rid, str):
        try:
            rid.encode("utf-8")
        except UnicodeEncodeError:
            rid = None
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return (types.INVALID_PARAMS, "Invalid params: text that is not valid Unicode (a lone "
                "surrogate); send UTF-8 text", rid)
    except (ValueError, RecursionError):
        return types.INVALID_REQUEST, "Invalid Request: nested too deeply", rid
    try:
        types.jsonrpc_message_adapter.validate_python(doc, by_name=False)
    except ValidationError:
        return (types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, "
                "notification or response object", rid)
    return None


class _Wire:
    """stdin/stdout of the server: lines in, checked before the MCP library parses them;
    JSON lines out, written whole on the event loop (so refusals never interleave)."""

    def __init__(self) -> None:
        self._in = sys.stdin.buffer
        self._out = sys.stdout.buffer

    async def write(self, text: str) -> None:
        self._out.write(text.encode("utf-8", "backslashreplace"))

    async def flush(self) -> None:
        self._out.flush()

    async def _refuse(self, code: int, message: str, rid: Any) -> None:
        await self.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                                     "error": {"code": code, "message": message}}) + "\n")
        await self.flush()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _readline(self, limit: int) -> bytes:
        # anyio's worker threads are pooled and reused: no thread per message.
        line: bytes = await anyio.to_thread.run_sync(self._in.readline, limit)
        return line

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await self._readline(MAX_MESSAGE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # drop the rest of the message
                    line = await self._readline(MAX_MESSAGE_BYTES)
                await self._refuse(types.INVALID_REQUEST, f"Invalid Request: a message is "
                                   f"at most {MAX_MESSAGE_BYTES // 2**20} MiB", None)
                continue
            if not line.strip():
                continue
            refusal = _refusal(line)
            if refusal is not None:
                await self._refuse(*refusal)
                continue
            yield line.decode("utf-8")


@asynccontextmanager
async def _stdio() -> AsyncIterator[tuple[Any, Any]]:
    wire = _Wire()
    async with stdio_server(stdin=wire, stdout=wire) as streams:  # type: ignore[arg-type]
        yield streams


async def _serve(server: MCPServer) -> None:
    low = server._lowlevel_server  # as MCPServer.run_stdio_async does, on the checked wire
    async with _stdio() as (read_stream, write_stream):
        await low.run(read_stream, write_stream, low.create_initialization_options())


def serve(store: str, source_roots: list[str | Path] | None = None,
          timeout_s: float = 30.0) -> None:
    """Serve the store over stdio until the client closes the connection."""
    server, worker = build_server(store, source_roots, timeout_s)
    worker.spawn()  # it imports while the client initializes
    try:
        anyio.run(_serve, server)
    finally:
        worker.close()
