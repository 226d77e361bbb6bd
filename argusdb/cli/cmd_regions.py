"""``argus regions SOURCE_FILE``: list the regions a source file declares."""

from __future__ import annotations

import click

from argusdb.api.surface import ProgramSource, parse_regions
from argusdb.cli.output import handle_errors, output_options, print_json, print_table
from argusdb.errors import InputError


@click.command("regions")
@click.argument("source_file")
@output_options
@handle_errors
def command(source_file: str, as_json: bool, as_csv: bool) -> None:
    """List the regions of SOURCE_FILE ('# region <name>' markers in @triton.jit functions)."""
    regions = parse_regions(ProgramSource.from_path(source_file))
    if not regions:
        raise InputError(source_file, "declares no @triton.jit function, so it has no regions",
                         "pass the Python file that defines the kernel (regions are "
                         "'# region <name>' comments inside it)")
    if as_json:
        print_json({"regions": [
            {"region_id": r.region_id, "start_line": r.start_line, "end_line": r.end_line}
            for r in regions]})
        return
    print_table(["region_id", "start_line", "end_line"],
                [(r.region_id, r.start_line, r.end_line) for r in regions], as_csv=as_csv)
