"""AR10 sandbox.function: only functions of the catalogue, and none with side effects."""

from __future__ import annotations

from sqlglot import exp

from argusdb.checker.context import Context
from argusdb.checker.functions import call_name, catalogue, lookup
from argusdb.checker.resolve import suggest
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class SandboxFunction(Rule):
    """Every function a query calls must be in the function catalogue
    (``argusdb/checker/functions.csv``: every function DuckDB lists, with its kind and what it
    does to evidence identity) and allowed there. Refused: functions with side effects or
    session state (``nextval``, ``setseed``, ``current_setting``, ``getvariable``), readers of
    files, the environment or the catalog (``read_text``, ``getenv``, ``current_database``),
    runners of SQL text (``query``, ``json_execute_serialized_sql``), engine internals, and any
    name the catalogue does not know (a function a later DuckDB adds is refused until it is
    classified): the checker fails closed.

    Anti-pattern::

        SELECT nextval('run_seq_gen'), getenv('HOME'), current_setting('threads')

    Best practice::

        SELECT tool, tool_version, device FROM run
    """

    code = "AR10"
    name = "sandbox.function"
    phase = "sandbox"

    def check(self, ctx: Context) -> list[Finding]:
        out: list[Finding] = []
        for f in ctx.nodes():
            if not isinstance(f, exp.Func) or isinstance(f.parent, exp.Table | exp.Lateral):
                continue  # table functions: AR09
            known = lookup(f)
            name = call_name(f) or type(f).__name__.lower()
            if known is None:
                out.append(self.finding(
                    ctx, f, f"function {name}() is not in the function catalogue, so the "
                            f"checker cannot say what it does to evidence"
                            f"{suggest(name, [n for n, g in catalogue().items() if g.allowed])}",
                    "use a catalogued function (argusdb/checker/functions.csv lists every "
                    "function with its kind and verdict)", function=name))
            elif not known.allowed:
                out.append(self.finding(
                    ctx, f, f"function {name}() is not allowed: it {known.reason}",
                    "ask about the evidence; run and device facts are columns of run, the "
                    "schema is in information_schema.columns", function=name))
        return out
