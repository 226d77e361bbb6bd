"""The agent surface: an MCP server (server.py) whose tools run in a replaceable worker
process (worker.py), over the same checked questions and answers as the CLI."""
