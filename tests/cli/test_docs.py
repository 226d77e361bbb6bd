"""docs/cli.md documents every command, and every documented command exists (as datasette
does)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import ROOT


def _readme_cli_block() -> str:
    text = (ROOT / "docs" / "cli.md").read_text()
    m = re.search(r"## CLI\n+```\n(.*?)```", text, re.S)
    assert m, "docs/cli.md has no '## CLI' code block"
    return m.group(1)


def test_readme_lists_exactly_the_registered_commands() -> None:
    documented = set(re.findall(r"^argus ([a-z-]+)", _readme_cli_block(), re.M))
    assert documented == set(main.commands)


def test_every_command_has_help_with_a_description() -> None:
    for name, cmd in main.commands.items():
        r = CliRunner().invoke(main, [name, "--help"])
        assert r.exit_code == 0, name
        assert (cmd.help or "").strip(), f"argus {name} has no description"
        assert "Usage: " in r.output
