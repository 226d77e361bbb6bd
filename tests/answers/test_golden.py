"""Golden answers: what ``argus diff``, ``argus trajectory``, ``argus launch diff`` and the
dashboard print for stores built from the H200 recordings, line for line, and what every one
of them must hold: units on values, one mark for a missing value, no exponent notation, no
Python reprs, a cohort column where one signal of a region has two, at most 60 lines.

Stores: the three matmul configurations (``tests/answers/test_h200_versions.py``), the
layer-norm program observed with its forced-wait and Proton-instrumented variants
(``layernorm_store``), the recorded 2-H200 torchrun launches (``tests/checker/conftest.py``),
and softmax's Nsight Compute raw page under two versions (2,000 and more kernel-wide signals).

Run with ``ARGUS_WRITE_GOLDEN=1`` to write the golden files anew after a deliberate change
(and read the diff before committing it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import argusdb
from argusdb import demo
from argusdb.answers.diff import diff
from argusdb.answers.trajectory import trajectory
from argusdb.cli import main
from tests.answers.conftest import match_golden
from tests.answers.test_h200_versions import KERNEL, build_store
from tests.checker.conftest import build_dist
from tests.conftest import DEMO, KERNELS

#: Lines an answer's screen view may take (stdout and stderr together).
SCREEN = 60
H200_VERSIONS = "config=bk32_s1;config=bk64_s3;config=bn256_s3"
#: The layer-norm store's versions: the program, its forced-wait and its Proton variant.
LAYERNORM_VERSIONS = "bdd0,8402,584f"


@pytest.fixture(scope="module")
def h200(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("golden") / "h200.duckdb"
    build_store(path).close()
    yield str(path)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("golden") / "dist.duckdb"
    build_dist(path)
    return str(path)


@pytest.fixture(scope="module")
def raw_pages(tmp_path_factory: pytest.TempPathFactory) -> str:
    """softmax's Nsight Compute raw page (every metric of the launch, kernel-wide) and its
    CUPTI trace, under num_warps=4 and num_warps=8 (the same bytes: a rebuild's versions)."""
    path = tmp_path_factory.mktemp("golden") / "raw.duckdb"
    with argusdb.connect(path, create=True) as db:
        for warps in ("4", "8"):
            for name in ("softmax.cupti.jsonl", "softmax.raw.csv"):
                db.ingest(DEMO / "softmax" / name, KERNELS / "softmax.py",
                          {**demo.OPTIONS, "num_warps": warps})
    return str(path)


def _run(*args: str, code: int = 0) -> str:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == code, r.output
    return r.stdout + (f"--- stderr\n{r.stderr}" if r.stderr else "")


def _readable(text: str) -> None:
    """What any answer a person reads must hold."""
    assert not re.search(r"\d[eE][+-]\d", text), "exponent notation"
    words = set(re.findall(r"\w+", text))
    assert not {"nan", "NaN", "None", "NULL", "inf"} & words, "a missing value spelt out"
    assert not re.search(r"[{\[]['\"]|\w\(\w+=", text), "a Python repr"
    assert "? passes" not in text and "– – –" not in text


def test_diff_is_the_golden_table(h200: str) -> None:
    text = _run("diff", h200, "--region", KERNEL, "--from", "config=bk64_s3", "--to",
                "config=bn256_s3")
    match_golden("diff_h200.txt", text)
    _readable(text)
    assert len(text.splitlines()) <= SCREEN
    # the duration of the clean runs, in µs, with its n; the verdict in words
    (dur,) = [ln for ln in text.split("--- stderr")[0].splitlines()
              if ln.startswith("duration")]
    assert "210.3 µs" in dur and "195.9 µs" in dur and "120/60" in dur
    assert "lower by 6.85 %" in dur


def test_trajectory_is_the_golden_table(h200: str) -> None:
    text = _run("trajectory", h200, "--versions", H200_VERSIONS)
    match_golden("trajectory_h200.txt", text)
    _readable(text)
    out = text.split("--- stderr\n")[0].splitlines()
    # one series of three versions: bk32_s1 -> bk64_s3 -> bn256_s3, each step significant
    assert [ln.split()[2] for ln in out[1:4]] == H200_VERSIONS.split(";")
    assert out[4].startswith("+ 704 more with a value in one version only (--all")
    # _unattributed is no region of any source: no "does not declare this region" note
    assert "_unattributed" not in text


def test_the_trajectory_of_thousands_of_series_fits_a_screen(layernorm_store: str) -> None:
    """Without --signal the layer norm's three versions hold 17,242 series (16,384 of them
    per-CTA, per-warp scope_cycles of the Proton variant): before the screen view the table
    printed 51,727 lines."""
    text = _run("trajectory", layernorm_store, "--versions", LAYERNORM_VERSIONS)
    match_golden("trajectory_layernorm.txt", text)
    _readable(text)
    assert len(text.splitlines()) <= SCREEN
    with argusdb.connect(layernorm_store, read_only=True) as db:
        every = trajectory(db, None, LAYERNORM_VERSIONS.split(","))
    assert len(every.series) == 17242
    assert sum(s.signal == "scope_cycles" and bool(s.key.scope) for s in every.series) == 16384
    assert f"+ {len(every.series) - 1:,} more with a value in one version only" in text
    full = _run("trajectory", layernorm_store, "--versions", LAYERNORM_VERSIONS, "--all")
    assert len(full.split("--- stderr\n")[0].splitlines()) == 1 + 3 * len(every.series)


def test_a_trajectory_of_many_stepped_series_shows_the_headline_first(raw_pages: str) -> None:
    text = _run("trajectory", raw_pages, "--versions", "num_warps=4,num_warps=8")
    match_golden("trajectory_raw_pages.txt", text)
    _readable(text)
    lines = text.splitlines()
    assert len(lines) <= SCREEN
    with argusdb.connect(raw_pages, read_only=True) as db:
        every = trajectory(db, None, ["num_warps=4", "num_warps=8"])
    shown = (SCREEN - 2) // 2
    assert len(every.series) > 2000
    assert lines[-1] == (f"+ {len(every.series) - shown:,} more series (--all: every series; "
                         f"--json: every point)")
    body = [ln.split() for ln in lines[1:-1]]
    assert len(body) == 2 * shown
    # Nsight Compute's long metric names are cut to the signal column; each still reads as
    # exactly one of the trajectory's signals (the others are cut in the middle with '…')
    from argusdb.answers.trajectory import SIGNAL_WIDTH
    names = {s.signal for s in every.series}
    for b in body:
        assert len(b[1]) <= SIGNAL_WIDTH
        cut = re.compile(".*".join(map(re.escape, b[1].split("…"))) + "$")
        assert sum(bool(cut.search(n)) for n in names) >= 1, b[1]
    # duration leads, in two named cohorts (clean timing and the ncu replay's duration)
    assert [b[1] for b in body[:4]] == ["duration"] * 4
    assert lines[0].split()[2] == "cohort" and "clean" in body[0] and "observed," in body[0]
    assert sum("replay(38" in " ".join(b) for b in body[:4]) == 2
    assert all("µs" in b for b in body[:4])


def test_launch_diff_is_the_golden_table_for_every_selector(dist: str) -> None:
    by_prefix = _run("launch", "diff", dist, "--from", "593565e8", "--to", "812dae0b")
    match_golden("launch_diff_dist.txt", by_prefix)
    _readable(by_prefix)
    by_option = _run("launch", "diff", dist, "--from", "version=serial", "--to",
                     "version=overlap")
    # the same table whichever selector names the versions; only the title's labels differ
    assert by_option.split("--- stderr")[0] == by_prefix.split("--- stderr")[0]
    assert "version=serial (593565e8bd3cde09) -> version=overlap" in by_option
    (exposed,) = [ln for ln in by_prefix.splitlines() if ln.startswith("exposed_communication")]
    assert "428.2 µs" in exposed and "251.3 µs" in exposed and exposed.endswith("true")


def _page_text(page: str) -> str:
    """The dashboard's words and numbers, one table row or paragraph a line (charts out)."""
    page = re.sub(r"<svg.*?</svg>", "[chart]", page, flags=re.S)
    page = re.sub(r"<style.*?</style>", "", page, flags=re.S)
    page = re.sub(r"</(tr|p|h\d|table)>", "\n", page)
    page = re.sub(r"</t[dh]>", " | ", page)
    page = re.sub(r"<[^>]+>", "", page)
    import html

    lines = (re.sub(r"\s+", " ", html.unescape(ln)).strip(" |") for ln in page.splitlines())
    return "\n".join(ln for ln in lines if ln) + "\n"


@pytest.mark.parametrize("name", ["h200", "dist"])
def test_the_dashboard_is_the_golden_page(name: str, request: pytest.FixtureRequest,
                                          tmp_path: Path) -> None:
    store = request.getfixturevalue(name)
    from argusdb.answers.dashboard import build

    with argusdb.connect(store, read_only=True) as db:
        page = build(db, tmp_path / "dash").read_text(encoding="utf-8")
    text = _page_text(page)
    match_golden(f"dashboard_{name}.txt", text)
    _readable(text)
    # every cell escaped ("&lt; 0.1 %"): the page's text is only what its tags hold
    assert "< 0.1 %" not in page and not re.search(r"<(?![a-zA-Z/!?])", page)
    # the charts' axes are in the tables' units: no matplotlib offset text (1e7) in any SVG
    # (matplotlib writes each text of a chart as an SVG comment: an offset reads ' 1e7 ')
    texts = re.findall(r"<!-- (.*?) -->", page)
    assert len(texts) > 5 and not [t for t in texts if re.search(r"\de[+-]?\d|×10", t)]
    if name == "dist":  # led by the clean observed result, before any derived value
        lead = text.index("exposed_communication: 428.2 µs → 251.3 µs")
        assert lead < text.index("Region breakdown") and "significant" in text[lead:][:120]


def test_notebook_html_is_the_screen_view_in_human_units(layernorm_store: str) -> None:
    from argusdb.answers.report import report

    with argusdb.connect(layernorm_store, read_only=True) as db:
        rep = report(db, "fused_norm/layernorm_fwd/load")
        d = diff(db, "fused_norm/layernorm_fwd", "bdd0", "8402")
        t = trajectory(db, None, LAYERNORM_VERSIONS.split(","))
    page = rep._repr_html_()
    text = re.sub(r"<[^>]+>", " ", page)
    _readable(text)
    assert len(rep.claims) == 16460 and page.count("<tr>") <= 2 * (1 + 12)
    assert "median 212 cycles" in text and "103 – 1,672 cycles" in text
    assert "stall reasons, Proton PC samples: imc_miss 248" in text
    traj = t._repr_html_()
    assert traj.count("<tr>") <= SCREEN and "17,241 more with a value in one version" in traj
    _readable(re.sub(r"<[^>]+>", " ", traj) + re.sub(r"<[^>]+>", " ", d._repr_html_()))
