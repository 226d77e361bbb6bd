"""docs/observe.md's observe example is what argus observe prints today (task table part)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import KERNELS, ROOT


def test_readme_dry_run_example_matches(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "observe.md").read_text(encoding="utf-8")
    block = re.search(r"\$ argus observe kernels/softmax\.py(.*?)\n```", text, re.S)
    assert block
    lines = block.group(1).splitlines()
    shown = lines[lines.index(next(ln for ln in lines if ln.startswith("task "))):]
    shown = shown[: shown.index("")]
    shutil.copytree(KERNELS, tmp_path / "kernels")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = CliRunner().invoke(main, ["demo", "argus-demo.duckdb"])
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(main, [
            "observe", "kernels/softmax.py", "--region", "softmax/softmax_fwd/load", "--signals",
            "exposed_latency,inst_executed,dram__bytes_read.sum,dram__bytes_write.sum",
            "--store", "argus-demo.duckdb", "--dry-run"])
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    now = r.stdout.splitlines()
    assert now[: now.index("")] == shown
