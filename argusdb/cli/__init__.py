"""``argus``: a thin command line over the argusdb library.

Every command is a module of this package that defines ``command`` (a click command); it is
registered here by name, so a new command is a new file.
"""

from __future__ import annotations

import importlib
import pkgutil

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="argusdb")
def main() -> None:
    """argusdb: an evidence database for GPU performance measurement."""


for _mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _mod.name.startswith("cmd_"):
        main.add_command(importlib.import_module(f"{__name__}.{_mod.name}").command)
