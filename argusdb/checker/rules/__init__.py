"""Compatibility and sandbox rules, one module per rule (as sqlfluff does).

A rule is a :class:`Rule` subclass in a module ``arNN_<name>.py`` with a stable ``code``, a
dotted ``name``, a ``phase`` and a docstring that states the rule with an anti-pattern and a
best-practice example. Its pass/fail cases are in ``tests/checker/rules/<code>.yaml``.

Phases run in order and a phase that refuses stops the later ones: ``sandbox`` rules read only
the parsed statements (so hostile text never reaches the store, not even as a metadata query),
``names`` rules read the resolver's results, ``compat`` rules read the provenance pass's
combinations.

Example:
    >>> [r.code for r in all_rules()][:2]
    ['AR01', 'AR02']
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import ClassVar

from argusdb.checker.context import Context
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
