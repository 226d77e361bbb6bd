"""``argus mcp STORE``: serve the checked surface to agents over MCP (stdio)."""

from __future__ import annotations

from pathlib import Path

import click

from argusdb.api import connect
from argusdb.cli.output import Seconds, handle_errors
from argusdb.errors import UsageError


@click.command("mcp")
@click.argument("store")
@click.option("--source-root", "source_roots", multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A folder whose .py files observe_plan may read (repeatable; default: the "
                   "current folder).")
@click.option("--timeout", "timeout_s", type=Seconds(), default=30.0, show_default=True,
              help="Time limit of one tool call, seconds.")
@handle_errors
def command(store: str, source_roots: tuple[Path, ...], timeout_s: float) -> None:
    """Serve STORE as an MCP server over stdio (tools: query, check, explain, report, diff,
    trajectory, observe_plan). Needs the 'agent' extra: pip install 'argusdb[agent]'.

    The store is only ever opened read-only, by one worker process that holds it while calls
    come and lets go after two idle seconds (so ingests can run between calls).

    Example client config: {"command": "argus", "args": ["mcp", "argus.duckdb"]}
    """
    connect(store, read_only=True).close()  # fail early, with a message: missing or stale
    try:
        from argusdb.agent.server import serve
    except ImportError as exc:
        raise UsageError(f"argus mcp needs the 'mcp' package ({exc}); install it with "
                         f"pip install 'argusdb[agent]'") from exc
    serve(store, list(source_roots) or [Path.cwd()], timeout_s)
