"""``argus schema [NAME]``: the tables, views and macros users can read, with their docs.

The text comes from the documented SQL modules (``argusdb/schema/`` and ``argusdb/queries/``), the
same text the catalog copies into DuckDB with ``COMMENT ON``; no store is needed.
"""

from __future__ import annotations

import difflib
import re

import click

from argusdb.api.surface import catalog
from argusdb.cli.output import handle_errors, output_options, print_json, print_table
from argusdb.errors import UsageError


@click.command("schema")
@click.argument("name", required=False)
@output_options
@handle_errors
def command(name: str | None, as_json: bool, as_csv: bool) -> None:
    """List the public tables, views and macros; with NAME, its columns (meaning, unit and
    provenance of each).

    \b
    Examples:
      argus schema
      argus schema evidence
    """
    objects = {n: o for n, o in catalog.all_objects().items() if not n.startswith("_")}
    if name is None:
        rows = [(o.name, o.kind, _first_sentence(o.description))
                for o in sorted(objects.values(), key=lambda o: (o.kind, o.name))]
        if as_json:
            print_json({"objects": [
                {"name": o.name, "kind": o.kind, "description": o.description,
                 "columns": o.columns} for o in objects.values()]})
            return
        print_table(["name", "kind", "description"], rows, as_csv=as_csv)
        return
    obj = objects.get(name)
    if obj is None:
        near = difflib.get_close_matches(name, list(objects), n=1)
        hint = f" did you mean {near[0]!r}?" if near else ""
        raise UsageError(f"no table, view or macro named {name!r}.{hint} 'argus schema' "
                         "lists them")
    if as_json:
        print_json({"name": obj.name, "kind": obj.kind, "description": obj.description,
                    "columns": obj.columns})
        return
    if as_csv:
        print_table(["column", "meaning, unit and provenance"], list(obj.columns.items()),
                    as_csv=True)
        return
    click.echo(f"{obj.kind} {obj.name}: {obj.description}\n")
    print_table(["column", "meaning, unit and provenance"], list(obj.columns.items()))


def _first_sentence(text: str) -> str:
    # a module's dependency line ('requires: a.b, shape') is for the catalog, not the reader
    text = re.sub(r"^requires:\s*[\w.]+(?:,\s*[\w.]+)*\s+", "", text)
    head = re.split(r"(?<!e\.g)(?<!i\.e)\. ", text)[0].rstrip(".")
    return head if len(head) <= 100 else head[:97] + "..."
