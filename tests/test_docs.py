"""The README stays a first screen, every link of the README and docs/ resolves, and the CLI
reference is the current ``--help``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A Markdown link: [text](target), the target without spaces.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    out = set()
    for h in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        out.add(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
    return out


def test_readme_stays_within_15_kb_and_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 15 * 1024
    block = re.match(r"# argusdb\n\n```sh\n(.*?)\n```", text, re.S)
    assert block
    install, tests = block.group(1).splitlines()
    assert install.endswith("argus demo") and "pip install" in install
    assert tests == "bash .ci/run"


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """``.ci/run`` is the one test command: the README names it, it names the README."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pytest" in ci and "ruff check" in ci and "mypy" in ci


def test_every_relative_link_resolves() -> None:
    broken = []
    checked = 0
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            checked += 1
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []
    assert checked >= 20


def test_every_docs_page_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {t.partition("#")[0] for t in LINK.findall(readme)}
    pages = {f"docs/{p.name}" for p in PAGES[1:]}
    assert pages <= linked


def test_cli_reference_is_current() -> None:
    from tools import cli_docs

    assert cli_docs.OUT.read_text(encoding="utf-8") == cli_docs.render(), (
        "docs/cli-reference.md is stale: run python -m tools.cli_docs")


def test_rule_reference_is_current() -> None:
    from tools import rules_docs

    assert rules_docs.OUT.read_text(encoding="utf-8") == rules_docs.render(), (
        "docs/rules.md is stale: run python -m tools.rules_docs")


def test_figures_page_is_generated_from_the_bench_results() -> None:
    from tools import figures_docs

    assert figures_docs.OUT.read_text(encoding="utf-8") == figures_docs.render(), (
        "docs/figures.md is stale: run python -m tools.figures_docs")


def test_a_figure_from_recorded_bench_json_is_computed_from_it() -> None:
    """The shared-store figure is rendered from the benchmark's own recorded output (the
    figure file's ``raw``), so a changed recording changes the page."""
    import json

    from tools import figures_docs

    (path,) = [p for p in figures_docs.RESULTS.glob("*.json")
               if json.loads(p.read_text(encoding="utf-8"))["raw"]]
    doc = json.loads(path.read_text(encoding="utf-8"))
    raw = json.loads((ROOT / doc["raw"]).read_text(encoding="utf-8"))
    w, ratios = raw["writers"], raw["questions"]["ratio"].values()
    assert figures_docs.row(path).split(" | ")[1] == (
        f"{raw['ingest']['ratio']:.2f}×, peak RSS {raw['ingest']['big_rss_mib']} MiB; "
        f"{w['throughput_ratio']:.2f}× throughput, {w['shared']['runs_landed']}/"
        f"{w['n'] * w['runs_each']} once; {min(ratios):.1f}–{max(ratios):.1f}×")
    raw["ingest"]["ratio"] = 0.5
    assert figures_docs._bench_shared(raw).startswith("0.50×, peak RSS")


def test_a_figure_file_without_its_command_is_refused_by_name(tmp_path: Path) -> None:
    import json

    from tools import figures_docs

    bad = tmp_path / "01-bad.json"
    bad.write_text(json.dumps({"what": "x", "figure": "1×", "target": None, "machine": "CPU",
                               "date": "2026-12-03", "details": {"title": "t", "page": "t.md"},
                               "raw": None}), encoding="utf-8")
    with pytest.raises(figures_docs.FigureError, match=r"01-bad.json: lacks command"):
        figures_docs.row(bad)


def test_figures_page_has_one_line_per_figure_with_command_machine_and_date() -> None:
    text = (ROOT / "docs" / "figures.md").read_text(encoding="utf-8")
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| ---")]
    head, body = rows[0], rows[1:]
    assert head.split(" | ")[3:6] == ["command", "machine", "date"]
    assert len(body) >= 30
    for r in body:
        cells = [c.strip() for c in r.strip("|").split(" | ")]
        assert len(cells) == 7, r
        assert cells[3].startswith("`") and cells[4] and re.fullmatch(r"\d{4}-\d\d-\d\d",
                                                                        cells[5]), r
        assert len(r) <= 400, r  # a figure, not its history
