"""AR06 names.unknown_table: every FROM item is a view, table or construct of the catalog."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.resolve import known_relations
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
        known = ", ".join(known_relations())
        return [self.finding(ctx, node, f"no table or view {name!r} in the store{hint}",
                             f"read one of: {known} (documented in argusdb/schema/ and "
                             f"argusdb/queries/; "
                             f"evidence is the main view)", table=name)
                for node, name, hint in ctx.unknown_tables]
