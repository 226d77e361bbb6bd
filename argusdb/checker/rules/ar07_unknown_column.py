"""AR07 names.unknown_column: every column belongs to a table of its query."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class UnknownColumn(Rule):
    """Every column must resolve to one source of its scope (or of an enclosing scope), to a
    select-list alias or to a lambda parameter; otherwise it is refused with the closest names.
    An unqualified column that two sources of its scope both have is refused as ambiguous, as
    DuckDB refuses to bind it (``program_version`` of ``evidence JOIN run``): qualify it.

    Anti-pattern::

        SELECT region, median(duration) FROM evidence GROUP BY region

    Best practice::

        SELECT region_id, median(value) FROM evidence WHERE signal = 'duration'
        GROUP BY region_id, program_version
    """

    code = "AR07"
    name = "names.unknown_column"
    phase = "names"

    def check(self, ctx: Context) -> list[Finding]:
        ambiguous = [self.finding(ctx, node,
                                  f"column reference {name!r} is ambiguous: "
                                  f"{' and '.join(f'{a}.{name}' for a in sources)} both have it",
                                  f"qualify it with the table it is meant from, e.g. "
                                  f"{sources[0]}.{name}", column=name, sources=sources)
                     for node, name, sources in ctx.ambiguous_columns]
        return ambiguous + [self.finding(ctx, node, problem,
                             "use a column of the tables in FROM; their meaning, unit and "
                             "provenance are documented in argusdb/schema/ and argusdb/queries/ "
                             "(e.g. "
                             "argusdb/queries/evidence.sql)", column=name)
                for node, name, problem in ctx.unknown_columns]
