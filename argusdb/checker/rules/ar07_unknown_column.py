"""AR07 names.unknown_column: every column belongs to a table of its query."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class UnknownColumn(Rule):
    """Every column must resolve to one source of its scope (or of an enclosing scope), to a
    select-list alias or to a lambda parameter; otherwise it is refused with the closest names.

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
        return [self.finding(ctx, node, problem,
                             "use a column of the tables in FROM; their meaning, unit and "
                             "provenance are documented in argusdb/schema/ and argusdb/queries/ "
                             "(e.g. "
                             "argusdb/queries/evidence.sql)", column=name)
                for node, name, problem in ctx.unknown_columns]
