"""Write ``docs/api.md``: the Python API reference, one page, generated from the docstrings.

pdoc reads the objects (signatures as Python prints them, docstrings as written, Google style
turned into Markdown); this script only chooses what is public and in which order. Run it
after changing a public docstring; ``tests/test_api_docs.py`` fails while the page is stale::

    python -m tools.api_docs            # rewrites docs/api.md
    python -m tools.api_docs --check    # exit 1 when docs/api.md is not current
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

#: What the page documents: (module, names), in the order a reader needs them.
PUBLIC: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("argusdb.api", ("connect", "Connection")),
    ("argusdb.answers.public", ("report", "diff", "trajectory")),
    ("argusdb.observe", ("observe",)),
    ("argusdb.observe.observation", ("Observation",)),
    ("argusdb.answers.report", ("Report",)),
    ("argusdb.answers.claims", ("Claim",)),
    ("argusdb.answers.diff", ("DiffResult", "DiffRow")),
    ("argusdb.answers.trajectory", ("Trajectory", "Series", "Point")),
    ("argusdb.answers.export", ("perfetto_trace", "hatchet_literal", "parquet")),
    ("argusdb.answers.dashboard", ("build",)),
    ("argusdb.errors", ("ArgusError", "UsageError", "InputError", "StoreError",
                        "QueryRefused", "QueryFailed", "Finding", "PlanError", "NoGpuError",
                        "RunnerMissingError", "VariantMismatch", "NoEvidence")),
)
OUT = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def _md(docstring: str) -> str:
    import pdoc.docstrings

    text = pdoc.docstrings.convert(docstring, "google", None).strip()
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _signature(obj: object) -> str:
    sig = str(getattr(obj, "signature", "") or "")
    return re.sub(r"\s+", " ", sig).replace("( ", "(").replace(", )", ")").replace(" )", ")")


def render() -> str:
    """The page as Markdown."""
    import pdoc.doc

    out = ["# argusdb Python API", "",
           "Generated from the docstrings by `python -m tools.api_docs` (pdoc); do not edit.",
           ""]
    for module, names in PUBLIC:
        mod = pdoc.doc.Module.from_name(module)
        for name in names:
            obj = mod.get(name)
            if obj is None:
                raise SystemExit(f"{module}.{name}: not found; update tools/api_docs.py")
            kind = "class" if isinstance(obj, pdoc.doc.Class) else "function"
            out += [f"## `{name}` ({kind}, `{module}`)", ""]
            sig = _signature(obj)
            if sig:
                out += ["```python", f"{name}{sig}", "```", ""]
            if obj.docstring:
                out += [_md(obj.docstring), ""]
            if isinstance(obj, pdoc.doc.Class):
                for m in obj.own_members:
                    if m.name.startswith("_") or not isinstance(m, pdoc.doc.Function):
                        continue
                    out += [f"### `{name}.{m.name}`", "", "```python",
                            f"{m.name}{_signature(m)}", "```", ""]
                    if m.docstring:
                        out += [_md(m.docstring), ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is stale")
    args = ap.parse_args(argv)
    page = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != page:
            print(f"{OUT.name} is stale: run python -m tools.api_docs", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(page, encoding="utf-8")
    print(f"wrote {OUT} ({page.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
