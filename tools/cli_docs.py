"""Write ``docs/cli-reference.md``: every command's ``--help``, as ``argus`` prints it.

Run it after changing a command's options or help; ``tests/test_docs.py`` fails while the page
is stale::

    python -m tools.cli_docs            # rewrites docs/cli-reference.md
    python -m tools.cli_docs --check    # exit 1 when docs/cli-reference.md is not current
"""

from __future__ import annotations

import sys
from pathlib import Path

from tools.generated import write_or_check

OUT = Path(__file__).resolve().parents[1] / "docs" / "cli-reference.md"
#: Width the help is wrapped at (click's default terminal width).
WIDTH = 100


def _help(args: list[str]) -> str:
    from click.testing import CliRunner

    from argusdb.cli import main

    r = CliRunner().invoke(main, [*args, "--help"], terminal_width=WIDTH)
    if r.exit_code != 0:
        raise SystemExit(f"argus {' '.join(args)} --help exited {r.exit_code}: {r.output}")
    return r.output.rstrip()


def _commands() -> list[list[str]]:
    import click

    from argusdb.cli import main

    out: list[list[str]] = []
    for name in sorted(main.commands):
        cmd = main.commands[name]
        out.append([name])
        if isinstance(cmd, click.Group):
            out.extend([name, sub] for sub in sorted(cmd.commands))
    return out


def render() -> str:
    """The page as Markdown."""
    parts = ["# argus CLI reference", "",
             "Generated from `argus COMMAND --help` by `python -m tools.cli_docs`; do not edit. "
             "Exit codes, output formats and errors: [cli.md](cli.md).", "",
             "## argus", "", "```", _help([]), "```", ""]
    for args in _commands():
        parts += [f"## argus {' '.join(args)}", "", "```", _help(args), "```", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__doc__ or "", OUT, render, "tools.cli_docs", argv)


if __name__ == "__main__":
    sys.exit(main())
