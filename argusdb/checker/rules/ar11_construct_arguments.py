"""AR11 construct.arguments: evidence-aware constructs take literal, known arguments."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class ConstructArguments(Rule):
    """``version_diff`` and ``evidence_accepting`` are read by the checker before the query
    runs, so their arguments must be string literals (or a list of them) it can read, of the
    right number, and an acknowledgement must name something that can be acknowledged.

    Anti-pattern::

        SELECT * FROM evidence_accepting('everything')
        SELECT * FROM version_diff('duration', program_version, 'b')

    Best practice::

        SELECT * FROM evidence_accepting(['class_mix', 'cross_pass'])
        SELECT * FROM version_diff('duration', 'ee0369be2e320607', '0e23139fd1d85fdf')
    """

    code = "AR11"
    name = "construct.arguments"
    phase = "names"

    def check(self, ctx: Context) -> list[Finding]:
        return [self.finding(ctx, node, problem,
                             f"see the {name} docs (README 'Checked queries'): literal "
                             f"arguments, e.g. evidence_accepting('class_mix') or "
                             f"version_diff('duration', 'FROM_VERSION', 'TO_VERSION')",
                             construct=name)
                for node, name, problem in ctx.bad_constructs]
