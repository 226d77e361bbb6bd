"""Write ``docs/rules.md``: the checker's rule reference, generated from the rule files.

Each rule module of ``argusdb/checker/rules/`` holds one rule class whose docstring says what
it refuses, with an anti-pattern and a best practice; its YAML cases live in
``tests/checker/rules/<code>.yaml``. Run it after changing a rule; ``tests/test_docs.py`` fails
while the page is stale::

    python -m tools.rules_docs            # rewrites docs/rules.md
    python -m tools.rules_docs --check    # exit 1 when docs/rules.md is not current
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from tools.generated import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "rules.md"


def render() -> str:
    """The page as Markdown."""
    from argusdb.checker.rules import all_rules

    parts = ["# Checker rules", "",
             "Generated from the rule files (`argusdb/checker/rules/`) by "
             "`python -m tools.rules_docs`; do not edit. How the checker runs them: "
             "[queries.md](queries.md).", "",
             "| code | name | phase | cases |", "| --- | --- | --- | --- |"]
    rules = all_rules()
    for r in rules:
        cases = ROOT / "tests" / "checker" / "rules" / f"{r.code}.yaml"
        link = f"[{cases.name}](../{cases.relative_to(ROOT)})" if cases.exists() else "–"
        parts.append(f"| [{r.code}](#{r.code.lower()}-{r.name.replace('.', '')}) | "
                     f"`{r.name}` | {r.phase} | {link} |")
    for r in rules:
        doc = inspect.cleandoc(type(r).__doc__ or "")
        source = Path(inspect.getfile(type(r))).relative_to(ROOT)
        parts += ["", f"## {r.code} {r.name}", "", f"`{source}`", "", doc]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__doc__ or "", OUT, render, "tools.rules_docs", argv)


if __name__ == "__main__":
    sys.exit(main())
