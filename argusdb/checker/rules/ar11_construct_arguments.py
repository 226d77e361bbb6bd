"""AR11 construct.arguments: evidence-aware constructs take literal, known arguments."""

from __future__ import annotations

from argusdb.checker.constructs import CONSTRUCTS
from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class ConstructArguments(Rule):
    """``version_diff``, ``evidence_accepting`` and the interval macros are read by the checker
    before the query runs, so their arguments must be string literals (or a list of them) it
    can read, of the right number; an acknowledgement must name something that can be
    acknowledged, and an interval selector a kind or role of ``interval_event``.

    Anti-pattern::

        SELECT * FROM evidence_accepting('everything')
        SELECT * FROM version_diff('duration', program_version, 'b')
        SELECT * FROM interval_span_join('collective', 'computer')

    Best practice::

        SELECT * FROM evidence_accepting(['class_mix', 'cross_pass'])
        SELECT * FROM version_diff('duration', 'ee0369be2e320607', '0e23139fd1d85fdf')
        SELECT * FROM interval_span_join('collective', 'compute')
    """

    code = "AR11"
    name = "construct.arguments"
    phase = "names"

    def check(self, ctx: Context) -> list[Finding]:
        return [self.finding(ctx, node, problem, _remedy(name), construct=name)
                for node, name, problem in ctx.bad_constructs]


def _remedy(name: str) -> str:
    con = CONSTRUCTS.get(name)
    if con is not None and con.selectors:
        args = ", ".join(repr(s) for s in ("collective", "compute")[:len(con.params)])
        return (f"give {name} literal selectors, each a kind or role of interval_event "
                f"({', '.join(con.selectors)}), e.g. {name}({args}) (README 'Distributed "
                f"programs', checked interval queries)")
    return (f"see the {name} docs (README 'Checked queries'): literal arguments, e.g. "
            f"evidence_accepting('class_mix') or version_diff('duration', 'FROM_VERSION', "
            f"'TO_VERSION')")
