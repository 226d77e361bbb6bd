"""The README's quick start prints what the README shows: the diff of two shipped matmul
recordings and the plan of the recorded model program (steps 4 and 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(marker: str) -> list[str]:
    """The lines of the first plain code block after ``marker``."""
    m = re.search(re.escape(marker) + r".*?\n```\n(.*?)\n```", README, re.S)
    assert m, marker
    return m.group(1).splitlines()


def test_step_4_diff_prints_the_readme_table(tmp_path: Path) -> None:
    store = str(tmp_path / "m.duckdb")
    for c in ("bk64_s3", "bn256_s3"):
        r = CliRunner().invoke(main, [
            "ingest", store, str(ROOT / "tests" / "data" / "gpu" / f"matmul.{c}.run1.cupti.jsonl"),
            "--program", str(ROOT / "argusdb" / "demo" / "kernels" / "matmul.py"),
            "--option", f"config={c}", "--option", "target=sm_90"])
        assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["diff", store, "--region", "matmul/matmul_kernel", "--from",
                                  "config=bk64_s3", "--to", "config=bn256_s3"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == _block_after("--from config=bk64_s3 --to config=bn256_s3\n")


def test_step_5_plan_prints_the_readme_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT / "tests" / "data" / "programs" / "model")
    r = CliRunner().invoke(main, [
        "observe", "--region", "fused_norm/layernorm_fwd/load", "--signals",
        "duration,inst_executed,warp_stall_samples", "--dry-run", "--", "python3", "model.py"])
    assert r.exit_code == 0, r.output
    shown = _block_after("--dry-run -- python3 model.py\n")
    assert re.fullmatch(r"plan p-…: (\d+) tasks", shown[0])
    now = r.stdout.splitlines()
    assert now[: now.index("")] == shown[1:]
    assert f"{len(shown) - 2} tasks" in shown[0]
