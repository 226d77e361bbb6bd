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

from argusdb.api import Connection
from argusdb.cli import main

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


def test_dashboard_renders_charts_with_data(relabelled: Connection, tmp_path: Path,
                                            browser: webdriver.Chrome) -> None:
    path = relabelled.store.path
    relabelled.close()
    r = CliRunner().invoke(main, ["dashboard", path, "--out", str(tmp_path / "dash")])
    assert r.exit_code == 0, r.output
    page = tmp_path / "dash" / "index.html"
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # no network
    browser.get(page.as_uri())
    assert browser.title == "argusdb dashboard"
    traj = browser.find_elements(By.CSS_SELECTOR, ".trajectory-chart svg")
    bars = browser.find_elements(By.CSS_SELECTOR, ".breakdown-chart svg")
    assert len(traj) == 1 and len(bars) == 2  # matmul trajectory; duration bars per program
    # The matmul trajectory: three versions, with error bars (matplotlib draws them as paths).
    svg = traj[0]
    assert svg.size["width"] > 200 and svg.size["height"] > 100
    assert len(svg.find_elements(By.CSS_SELECTOR, "path")) > 10
    tables = browser.find_elements(By.CSS_SELECTOR, ".diff-table")
    assert len(tables) == 1  # matmul (3 versions); softmax has one version: no diffs
    rows = tables[0].find_elements(By.CSS_SELECTOR, "tr")
    assert len(rows) == 1 + 2  # header + variant=a→b, b→moved
    assert "not significant" in rows[1].text
    browser.execute_script("arguments[0].scrollIntoView()", svg)
    png = browser.get_screenshot_as_png()
    (tmp_path / "dashboard.png").write_bytes(png)
    shutil.copy(tmp_path / "dashboard.png", Path("/tmp") / "argus-dashboard-test.png")
    loc = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, "
        "r.bottom];", svg)
    box = tuple(int(v) for v in loc)
    assert _ink(png, box) > 0.02  # axes, ticks, markers and the error bars are drawn
    blank = (box[2] + 20, box[1], box[2] + 120, box[3])
    assert _ink(png, blank) < 0.01  # next to the chart is page background
