"""``argus mcp STORE``: serve the checked surface to agents over MCP (stdio)."""

from __future__ import annotations

import click

from argusdb.cli.output import handle_errors
from argusdb.errors import UsageError
from argusdb.store import Store


@click.command("mcp")
@click.argument("store")
@handle_errors
def command(store: str) -> None:
    """Serve STORE as an MCP server over stdio (tools: query, check, explain, report, diff,
    trajectory, observe_plan). Needs the 'agent' extra: pip install 'argusdb[agent]'.

    Example client config: {"command": "argus", "args": ["mcp", "argus.duckdb"]}
    """
    Store.open(store).close()  # fail early, with a message, when the store is missing
    try:
        from argusdb.answers.mcp_server import serve
    except ImportError as exc:
        raise UsageError(f"argus mcp needs the 'mcp' package ({exc}); install it with "
                         f"pip install 'argusdb[agent]'") from exc
    serve(store)
