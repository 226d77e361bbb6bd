"""The entry point every page generator of ``tools/`` shares: write the page, or with
``--check`` exit 1 when the committed page differs from what the generator renders."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(doc: str, out: Path, render: Callable[[], str], module: str,
                   argv: list[str] | None = None) -> int:
    """Render ``out`` and write it; ``--check`` compares instead (exit 1, naming the fix)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    ns = ap.parse_args(argv)
    text = render()
    if ns.check:
        if out.read_text(encoding="utf-8") != text:
            print(f"{out} is stale: run python -m {module}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0
