"""Compatibility and sandbox rules, one module per rule (as sqlfluff does).

A rule is a :class:`Rule` subclass in a module ``arNN_<name>.py`` with a stable ``code``, a
dotted ``name``, a ``phase`` and a docstring that states the rule with an anti-pattern and a
best-practice example. Its pass/fail cases are in ``tests/checker/rules/<code>.yaml``.

Phases run in order and a phase that refuses stops the later ones: ``sandbox`` rules read only
the parsed statements (so hostile text never reaches the store, not even as a metadata query),
``names`` rules read the resolver's results, ``compat`` rules read the provenance pass's
combinations. A ``compat`` rule is a :class:`MixingRule`: it names the properties it judges
and words one refusal; the loop over the combinations that mix them is the base class's.

Example:
    >>> [r.code for r in all_rules()][:2]
    ['AR01', 'AR02']
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any, ClassVar

from argusdb.checker.context import Combination, Context
from argusdb.errors import Finding

PHASES = ("sandbox", "names", "compat")


class Rule:
    """Base of every rule: subclasses set the class attributes and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]
    phase: ClassVar[str]

    def check(self, ctx: Context) -> list[Finding]:
        raise NotImplementedError

    def finding(self, ctx: Context, node: object, message: str, remedy: str,
                **extra: object) -> Finding:
        from sqlglot import exp

        return ctx.finding(self.code, self.name, node if isinstance(node, exp.Expression)
                           else None, message, remedy, **extra)


class MixingRule(Rule):
    """A compatibility rule: one finding for each combination that puts rows differing in one
    of its properties together (``Context.mixing``), unless acknowledged or not judged.

    Subclasses set ``properties`` and implement ``explain``; ``judged`` narrows which
    combinations count.
    """

    phase: ClassVar[str] = "compat"
    #: The judged ``Context.mixing`` properties in order, each with the ``Props`` field of its
    #: values and the key the sorted values go under in the finding.
    properties: ClassVar[tuple[tuple[str, str, str], ...]]
    #: The ``evidence_accepting(...)`` acknowledgement that lets a mix pass (None: none does).
    acknowledged_by: ClassVar[str | None] = None

    def check(self, ctx: Context) -> list[Finding]:
        out = []
        for prop, field, key in self.properties:
            for c in ctx.mixing(prop):
                if self.acknowledged_by in c.acks or not self.judged(prop, c):
                    continue
                values = sorted(getattr(c.props, field))
                message, remedy = self.explain(prop, c, values)
                out.append(self.finding(ctx, c.node, message, remedy, **{key: values}))
        return out

    def judged(self, prop: str, c: Combination) -> bool:
        """Whether this mixing combination is refused (all are, unless a rule says)."""
        return True

    def explain(self, prop: str, c: Combination, values: list[Any]) -> tuple[str, str]:
        """The finding's message and remedy for ``c``, mixing ``values`` of ``prop``."""
        raise NotImplementedError


def shown(values: list[Any], most: int, sep: str = ", ") -> str:
    """The first ``most`` values joined, with how many more there are.

    Example:
        >>> shown(["a", "b", "c"], 2), shown(["a", "b", "c"], 2, "; ")
        ('a, b and 1 more', 'a; b; and 1 more')
    """
    more = len(values) - most
    return sep.join(str(v) for v in values[:most]) + (
        f"{sep.rstrip(' ,')} and {more} more" if more > 0 else "")


@cache
def all_rules() -> tuple[Rule, ...]:
    """One instance of every rule, ordered by code."""
    found: list[Rule] = []
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("ar"):
            continue
        m = importlib.import_module(f"{__name__}.{mod.name}")
        for obj in vars(m).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule \
                    and obj.__module__ == m.__name__:
                found.append(obj())
    return tuple(sorted(found, key=lambda r: r.code))


def rule(code: str) -> Rule:
    """The rule with ``code`` (e.g. 'AR01')."""
    for r in all_rules():
        if r.code == code:
            return r
    raise KeyError(code)
