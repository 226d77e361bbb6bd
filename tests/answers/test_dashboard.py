"""The dashboard renders in a real headless Chromium, with charts that show data.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them when missing).
"""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from argusdb.cli import main
from tests.answers.test_h200_versions import build_store

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,2400",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield drv
    drv.quit()


def _ink(png: bytes, box: tuple[int, int, int, int]) -> float:
    """Share of pixels in ``box`` that are not (near-)white background."""
    img = Image.open(io.BytesIO(png)).convert("L").crop(box)
    data = list(img.get_flattened_data())
    return sum(1 for v in data if v < 240) / max(len(data), 1)


def test_dashboard_renders_charts_with_data(tmp_path: Path,
                                            browser: webdriver.Chrome) -> None:
    """Three matmul versions recorded on the H200 (see test_h200_versions.py)."""
    build_store(tmp_path / "h200.duckdb").close()
    r = CliRunner().invoke(main, ["dashboard", str(tmp_path / "h200.duckdb"), "--out",
                                  str(tmp_path / "dash")])
    assert r.exit_code == 0, r.output
    page = tmp_path / "dash" / "index.html"
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # no network
    assert "<script" not in text
    browser.get(page.as_uri())
    assert browser.title == "argusdb dashboard"
    # Trajectories of the original versions (the forced-wait variant is left out): the kernel's
    # duration, and the mainloop's attributed counts, recorded for bk64_s3 only (one point).
    traj = browser.find_elements(By.CSS_SELECTOR, ".trajectory-chart svg")
    assert len(traj) == 1
    svg = traj[0]
    assert svg.size["width"] > 200 and svg.size["height"] > 100
    assert len(svg.find_elements(By.CSS_SELECTOR, "path")) > 10
    # Breakdown of bk64_s3 (the version with evidence in most regions): duration,
    # inst_executed, warp_stall_samples and the derived exposed latency.
    bars = browser.find_elements(By.CSS_SELECTOR, ".breakdown-chart svg")
    assert len(bars) == 4
    heading = browser.find_element(By.CSS_SELECTOR, ".breakdown h3").text
    assert heading == "Region breakdown (config=bk64_s3)"
    claims = browser.find_element(By.CSS_SELECTOR, "table.claims").text
    assert "exposed_latency" in claims and "insufficient" in claims
    (table,) = browser.find_elements(By.CSS_SELECTOR, ".diff-table")
    rows = table.find_elements(By.CSS_SELECTOR, "tr")
    assert len(rows) == 1 + 2  # header + bk64_s3 -> bk32_s1 -> bn256_s3 (recording order)
    assert "lower by" in rows[2].text or "higher by" in rows[2].text
    # bk64_s3 -> bk32_s1 is a 2x slowdown: red, not green; the step back down is green
    slow, fast = (r.find_elements(By.CSS_SELECTOR, "td")[-1] for r in rows[1:])
    assert slow.value_of_css_property("color") == "rgba(187, 0, 0, 1)"
    assert fast.value_of_css_property("color") == "rgba(0, 119, 0, 1)"
    browser.execute_script("arguments[0].scrollIntoView()", svg)
    png = browser.get_screenshot_as_png()
    shutil.copy(_save(tmp_path, png), Path("/tmp") / "argus-dashboard-test.png")
    loc = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, "
        "r.bottom];", svg)
    box = tuple(int(v) for v in loc)
    assert _ink(png, box) > 0.02  # axes, ticks, markers and the error bars are drawn
    blank = (box[2] + 20, box[1], box[2] + 120, box[3])
    assert _ink(png, blank) < 0.01  # next to the chart is page background


def _save(tmp_path: Path, png: bytes) -> Path:
    out = tmp_path / "dashboard.png"
    out.write_bytes(png)
    return out
