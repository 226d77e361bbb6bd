"""Write ``docs/rules.md``: the checker's rule reference, generated from the rule files.

Each rule module of ``argusdb/checker/rules/`` holds one rule class whose docstring says what
it refuses, with an anti-pattern and a best practice; its YAML cases live in
``tests/checker/rules/<code>.yaml``. Run it after changing a rule; ``tests/test_docs.py`` fails
while the page is stale::

    python -m tools.rules_docs            # rewrites docs/rules.md
    python -m tools.rules_docs --check    # exit 1 when docs/rules.md is not current
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    ns = ap.parse_args(argv)
    text = render()
    if ns.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python -m tools.rules_docs", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
