"""AR06 names.unknown_table: every FROM item is a view, table or construct of the catalog."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class UnknownTable(Rule):
    """A query may only read the store's documented tables and views, its CTEs and the
    evidence-aware constructs; an unknown name is refused with the closest known ones.

    Anti-pattern::

        SELECT * FROM evidences

    Best practice::

        SELECT * FROM evidence
    """

    code = "AR06"
    name = "names.unknown_table"
    phase = "names"

    def check(self, ctx: Context) -> list[Finding]:
        return [self.finding(ctx, node, f"no table or view {name!r} in the store{hint}",
                             "read one of the public views (argus describe lists them; "
                             "evidence is the main one)", table=name)
                for node, name, hint in ctx.unknown_tables]
