"""Dashboard surfaces without a browser: colours that follow the signal's direction, a page
that says something for one version, misspelt signals refused with did-you-mean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import argusdb
from argusdb import demo
from argusdb.answers.dashboard import build
from argusdb.answers.direction import better, step_class
from argusdb.cli import main
from argusdb.store import open_store
from tests.answers.test_h200_versions import build_store


@pytest.mark.parametrize(("signal", "unit", "ratio", "want"), [
    ("duration", "ns", 2.0, "worse"),           # a 2x slowdown is not green
    ("duration", "ns", 0.5, "better"),
    ("warp_stall_samples", "samples", 1.3, "worse"),
    ("exposed_latency", "ns", 0.8, "better"),
    ("inst_executed", "inst", 1.5, "changed"),  # more instructions: neither good nor bad
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", 1.2, "better"),
    ("some_counter", None, 3.0, "changed"),
])
def test_step_colour_follows_the_direction(signal: str, unit: str | None, ratio: float,
                                           want: str) -> None:
    assert step_class(signal, unit, ratio, True) == want
    assert step_class(signal, unit, ratio, False) == ""


def test_direction_table() -> None:
    assert [better(s, u) for s, u in [("duration", "ns"), ("stall_long_sb", "samples"),
                                      ("pc_samples", "samples"), ("x", "cycles")]] == [
        "lower", "lower", None, "lower"]


def test_h200_versions_colour_the_slowdown_red(tmp_path: Path) -> None:
    """bk64_s3 -> bk32_s1 is 2x slower on the H200, bk32_s1 -> bn256_s3 faster."""
    build_store(tmp_path / "h200.duckdb").close()
    with argusdb.connect(tmp_path / "h200.duckdb", read_only=True) as db:
        page = build(db, tmp_path / "dash").read_text()
    table = page.split("class='diff-table'", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>[^<]*</td><td>duration</td>.*?</tr>", table)
    classes = [re.findall(r"<td class='([a-z]*)'>[^<]*</td></tr>$", r)[0] for r in rows]
    assert classes == ["worse", "better"]
    assert ".worse{color:#b00" in page and ".better{color:#070" in page


def test_one_version_page_shows_breakdown_and_hot_spots(tmp_path: Path) -> None:
    st = open_store(tmp_path / "demo.duckdb", create=True)
    demo.build(st)
    st.close()
    with argusdb.connect(tmp_path / "demo.duckdb", read_only=True) as db:
        page = build(db, tmp_path / "dash").read_text()
    assert page.count("Region breakdown") == 2  # matmul and softmax, one version each
    assert page.count("no diffs: one version only") == 2
    hot = page.split("Instruction hot spots (warp_stall_samples)", 1)[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>(\w+)</td><td class='num'>(0x[0-9a-f]+)</td>", hot)
    assert len(rows) == 10 and {k for k, _ in rows} == {"matmul_kernel"}
    # shares in the one style of argusdb.answers.format ("26.7 %", a space before the sign)
    shares = [float(x) for x in re.findall(r"<td class='num'>([\d.]+) %</td></tr>", hot)]
    assert len(shares) == 10
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 100


def test_misspelt_signal_is_refused_with_did_you_mean(tmp_path: Path) -> None:
    st = open_store(tmp_path / "demo.duckdb", create=True)
    demo.build(st)
    st.close()
    r = CliRunner().invoke(main, ["dashboard", str(tmp_path / "demo.duckdb"), "--out",
                                  str(tmp_path / "dash"), "--signal", "duratoin"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "duration" in r.output and "mean" in r.output.lower()
    assert not (tmp_path / "dash" / "index.html").exists()
