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


def _helps() -> dict[str, tuple[str, str]]:
    """Each command's (docstring + epilog, --help output), launch's subcommands included."""
    import click

    out = {}
    for name, cmd in main.commands.items():
        subs = [(f"{name} {s}", c, [name, s]) for s, c in cmd.commands.items()] \
            if isinstance(cmd, click.Group) else []
        for label, c, args in [(name, cmd, [name]), *subs]:
            r = CliRunner().invoke(main, [*args, "--help"], terminal_width=100)
            out[label] = ((c.help or "") + "\n" + (c.epilog or ""), r.output)
    return out


def test_help_examples_are_printed_as_written() -> None:
    """click rewraps a paragraph unless it starts with a \\b line: every example line of a
    command's help comes out as one line."""
    checked = 0
    for name, (doc, shown) in _helps().items():
        lines = {ln.strip() for ln in shown.splitlines()}
        for ex in re.findall(r"^\s+(argus .+)$", doc, re.M):
            checked += 1
            assert ex.strip() in lines, (name, ex)
    assert checked >= 15


def test_observe_help_lists_the_signals() -> None:
    from argusdb.schema.signals import PCS_SIGNALS, SOURCE_SIGNALS, STALL_REASONS

    shown = CliRunner().invoke(main, ["observe", "--help"], terminal_width=100).output
    words = set(re.findall(r"[\w.]+", shown))
    for name in ("duration", "exposed_latency", *SOURCE_SIGNALS, *PCS_SIGNALS,
                 *(f"stall_{r}" for r in STALL_REASONS)):
        assert name in words, name
