"""``argus``: a thin command line over the argusdb library.

Every command is a module of this package, ``cmd_<name>.py``, that defines ``command`` (a click
command named ``<name>``, underscores as dashes); a new command is a new file. Commands load
lazily: ``argus query`` imports the query command alone, and ``argus --help`` reads the commands'
one-line help from their source without importing them (so SciPy, PyArrow compute or the
dashboard load only with the command that needs them).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Iterator, MutableMapping
from functools import cache
from pathlib import Path
from typing import Any

import click

from argusdb import environment


@cache
def _modules() -> dict[str, str]:
    """Command name -> module name, from the file names (nothing imported)."""
    return {m.name[4:].replace("_", "-"): m.name for m in pkgutil.iter_modules(__path__)
            if m.name.startswith("cmd_")}


def _help(module: str) -> str:
    """``command``'s docstring, read from the module's source."""
    tree = ast.parse((Path(__file__).parent / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "command":
            return ast.get_docstring(node) or ""
    return ""


class _LazyCommand(click.Command):
    """A placeholder that ``--help`` lists; the real command is imported when invoked."""

    def __init__(self, name: str, module: str) -> None:
        super().__init__(name)
        self._module = module

    def get_short_help_str(self, limit: int = 45) -> str:
        return click.Command(self.name, help=_help(self._module)).get_short_help_str(limit)


class _Commands(MutableMapping[str, click.Command]):
    """``Group.commands`` whose values are imported when first looked up."""

    def __init__(self) -> None:
        self._added: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name in self._added:
            return self._added[name]
        module = _modules()[name]  # KeyError: no such command
        cmd: click.Command = importlib.import_module(f"{__name__}.{module}").command
        return cmd

    def __setitem__(self, name: str, cmd: click.Command) -> None:
        self._added[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self._added[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(_modules()) | set(self._added)))

    def __len__(self) -> int:
        return len(set(_modules()) | set(self._added))


class LazyGroup(click.Group):
    """A click group whose commands are imported only when one is run (or asked for help)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _modules().get(cmd_name)
        if module is not None and ctx.meta.get(_LISTING):
            return _LazyCommand(cmd_name, module)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        return name, cmd, _default_store(cmd, rest)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        ctx.meta[_LISTING] = True  # list the commands without importing them
        try:
            super().format_commands(ctx, formatter)
        finally:
            ctx.meta[_LISTING] = False


#: ctx.meta key set while the group lists its commands in its help.
_LISTING = "argus.listing_commands"


#: Environment variable naming the store a command uses when its STORE argument is left out.
STORE_ENV = environment.STORE.name
#: ctx.meta key: -q was given (no progress bars or notes on stderr).
QUIET = "argus.quiet"


def _is_store(arg: str) -> bool:
    """Whether a command's first argument names a store rather than its next argument."""
    if arg.startswith("ducklake:") or arg.endswith((".duckdb", ".db")):
        return True
    p = Path(arg)
    try:
        with p.open("rb") as fh:
            return fh.read(12)[8:12] == b"DUCK"  # DuckDB's file header magic
    except OSError:
        return False


def _default_store(cmd: click.Command | None, args: list[str]) -> list[str]:
    """Put ``$ARGUS_STORE`` first when the command takes STORE first and it was left out."""
    import os

    env = os.environ.get(STORE_ENV)
    if not env or cmd is None or isinstance(cmd, _LazyCommand):
        return args
    first = next((p for p in cmd.params if isinstance(p, click.Argument)), None)
    if first is None or first.name != "store" or any(a in ("-h", "--help") for a in args):
        return args
    positional = [a for a in args if not a.startswith("-")]
    if positional and _is_store(positional[0]):
        return args
    return [env, *args]


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="argusdb")
@click.option("-v", "--verbose", count=True,
              help="Say on stderr what argus does (files read, queries run, seconds); -vv: more.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress bars or notes on stderr (errors are still printed).")
@click.pass_context
def main(ctx: click.Context, verbose: int, quiet: bool) -> None:
    """argusdb: an evidence database for GPU performance measurement.

    Commands that take a STORE first use $ARGUS_STORE when it is left out.
    """
    import logging

    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[
        min(verbose, 2)]
    class _Stderr(logging.Handler):
        """Diagnostics to the current stderr (data stays alone on stdout)."""

        def emit(self, record: logging.LogRecord) -> None:
            click.echo(self.format(record), err=True)

    log = logging.getLogger("argusdb")
    log.setLevel(level)
    for h in [h for h in log.handlers if type(h).__name__ == "_Stderr"]:
        log.removeHandler(h)
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("argus: %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    ctx.meta[QUIET] = quiet

