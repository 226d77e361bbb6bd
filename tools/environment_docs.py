"""Write ``docs/environment.md``: every ``ARGUS_*`` environment variable, generated from
:data:`argusdb.environment.VARIABLES`. ``tests/test_environment.py`` fails while the page is
stale::

    python -m tools.environment_docs            # rewrites docs/environment.md
    python -m tools.environment_docs --check    # exit 1 when docs/environment.md is not current
"""

from __future__ import annotations

import sys
from pathlib import Path

from tools.generated import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "environment.md"

_KINDS = {"user": "Set by a person or a script",
          "internal": "Set by argusdb for the child processes it starts",
          "tests": "Read by the test suite and `.ci/run`"}


def render() -> str:
    """The page as Markdown."""
    from argusdb.environment import VARIABLES

    parts = ["# Environment variables", "",
             "Generated from `argusdb/environment.py` by `python -m tools.environment_docs`; "
             "do not edit. argusdb reads no other `ARGUS_*` variable.", ""]
    for kind, title in _KINDS.items():
        parts += [f"## {title} ({kind})", "", "| variable | meaning |", "| --- | --- |"]
        parts += [f"| `{v.name}` | {v.meaning} |" for v in VARIABLES if v.kind == kind]
        parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__doc__ or "", OUT, render, "tools.environment_docs", argv)


if __name__ == "__main__":
    sys.exit(main())
