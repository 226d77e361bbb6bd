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
        # the names themselves go to the JSON envelope ('known'), not into the remedy line a
        # person reads (54 names on one line)
        known = list(known_relations())
        return [self.finding(ctx, node, f"no table or view {name!r} in the store{hint}",
                             f"read one of the {len(known)} documented tables and views "
                             f"('argus schema' lists them; evidence is the main view)",
                             table=name, known=known)
                for node, name, hint in ctx.unknown_tables]
