"""Write ``docs/figures.md``: one line per figure, generated from the benchmarks' JSON.

Each figure is one file of ``bench/results/`` (``NN-name.json``, in page order) holding what
was measured, the target, the command that measured it, the machine, the date and the page
with the details. Where the benchmark's own JSON output is recorded in the repository
(``raw``: a path from the repository root), the figure is computed from it here by the
renderer its file names (``render``); otherwise ``figure`` holds the figure as the run
printed it. A new measurement is a new or changed file (history lives in git). Run it after
changing one; ``tests/test_docs.py`` fails while the page is stale::

    python -m tools.figures_docs            # rewrites docs/figures.md
    python -m tools.figures_docs --check    # exit 1 when docs/figures.md is not current
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.generated import write_or_check

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "figures.md"
#: Fields every figure file has (``figure`` or ``raw`` with ``render`` besides).
FIELDS = ("what", "target", "command", "machine", "date", "details", "raw")

HEADER = """# Figures

Generated from `bench/results/*.json` by `python -m tools.figures_docs`; do not edit. One line
per figure: what was measured, the figure, the target, the command that measures it, the
machine and the date it was recorded. A figure whose benchmark JSON is recorded in the
repository (the file's `raw`) is computed from that JSON; the others are as their run printed
them. Each was measured in one run; the page named in the last column holds the details (load,
peers, rounds). Earlier values live in git history, not here. "CPU" machine: a 2-core machine
shared with other jobs (absolute times inflated, ratios measured in one run less so).

| what | figure | target | command | machine | date | details |
| --- | --- | --- | --- | --- | --- | --- |
"""


class FigureError(ValueError):
    """A figure file that cannot be rendered: names the file, the problem and the fix."""


def _bench_shared(raw: dict[str, Any]) -> str:
    """``bench/bench_shared.py``'s JSON: one more ingest, writers, questions vs embedded."""
    w = raw["writers"]
    ratios = raw["questions"]["ratio"].values()
    once = "once" if w["shared"]["writer_failures"] == 0 else \
        f"{w['shared']['writer_failures']} writer failures"
    return (f"{raw['ingest']['ratio']:.2f}×, peak RSS {raw['ingest']['big_rss_mib']} MiB; "
            f"{w['throughput_ratio']:.2f}× throughput, {w['shared']['runs_landed']}/"
            f"{w['n'] * w['runs_each']} {once}; {min(ratios):.1f}–{max(ratios):.1f}×")


#: Renderers of recorded benchmark JSON, by the name a figure file gives in ``render``.
RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {"bench_shared": _bench_shared}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def row(path: Path) -> str:
    """One figure file as a table row."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FigureError(f"{path}: not readable JSON ({exc}); fix or remove the file") from exc
    missing = [f for f in FIELDS if f not in doc]
    if missing:
        raise FigureError(f"{path}: lacks {', '.join(missing)}; every figure file has "
                          f"{', '.join(FIELDS)}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", str(doc["date"])):
        raise FigureError(f"{path}: date {doc['date']!r} is not YYYY-MM-DD")
    if doc["raw"]:
        render = RENDERERS.get(str(doc.get("render")))
        if render is None:
            raise FigureError(f"{path}: raw JSON given but render {doc.get('render')!r} is "
                              f"none of {', '.join(sorted(RENDERERS))}")
        raw_path = ROOT / doc["raw"]
        try:
            figure = render(json.loads(raw_path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise FigureError(f"{path}: its raw JSON {doc['raw']} cannot be rendered "
                              f"({type(exc).__name__}: {exc}); record the benchmark's output "
                              f"again") from exc
    elif doc.get("figure"):
        figure = str(doc["figure"])
    else:
        raise FigureError(f"{path}: neither a figure nor raw benchmark JSON")
    details = doc["details"]
    cells = [doc["what"], figure, doc["target"] or "–", f"`{doc['command']}`", doc["machine"],
             doc["date"], f"[{details['title']}]({details['page']})"]
    return "| " + " | ".join(_cell(str(c)) for c in cells) + " |"


def render() -> str:
    """The page as Markdown."""
    files = sorted(RESULTS.glob("*.json"))
    if not files:
        raise FigureError(f"{RESULTS}: no figure files")
    return HEADER + "".join(row(p) + "\n" for p in files)


def main(argv: list[str] | None = None) -> int:
    try:
        return write_or_check(__doc__ or "", OUT, render, "tools.figures_docs", argv)
    except FigureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
