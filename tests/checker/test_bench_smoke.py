"""The checker benchmark runs (tiny store: the figures themselves are in the README)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_checker_runs_and_prints_its_figures() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_checker.py"), "--rows",
                        "3000", "--repeat", "3", "--repeat-e2e", "1"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode in (0, 1), r.stderr
    assert "evidence rows" in r.stdout and "worst check median" in r.stdout
    assert "version_diff" in r.stdout
    # a window over a CTE, accepted by its per-region data check (the bench asserts it)
    assert "window over a CTE, per region" in r.stdout
