"""The A/B figures of docs/ab.md are recomputed from the recorded logs and stores."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from experiments.ab.harness import NAMES
from experiments.ab.summary import ARMS, SETTINGS, main, markdown, summarize
from experiments.ab.tests.conftest import DATA, log_rows

PAGE = Path(__file__).resolve().parents[3] / "docs" / "ab.md"


def _close(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12)
    else:
        assert a == b


def test_summary_recomputed_from_logs_and_stores(recorded: list[Path]) -> None:
    s = json.loads(json.dumps(summarize(recorded)))
    _close(s, json.loads((DATA / "summary.json").read_text()))
    assert (DATA / "summary.md").read_text() == markdown(s)


def test_every_kernel_ran_both_arms_with_eight_seeds(recorded: list[Path]) -> None:
    s = json.loads((DATA / "summary.json").read_text())
    assert sorted(s["kernels"]) == sorted(NAMES)
    for k in s["kernels"].values():
        assert k["meta"]["seeds"] == list(range(8)) and k["meta"]["gpu"] is True
        for arm in ARMS:
            for setting in SETTINGS:
                assert len(k["arms"][arm][setting]["speedups"]) == 8
    # Only the evidence arm pays for evidence; both arms pay for candidates.
    t = s["totals"]
    assert t["latency"]["gpu_s"]["evidence"] == 0 and t["evidence"]["gpu_s"]["evidence"] > 0
    # Budgets bind: no run's budgeted best lies past its budget, and each arm had one budget.
    for part in recorded:
        for kdir in part.iterdir():
            if not (kdir / "meta.json").exists():
                continue
            rows = [r for r in log_rows(kdir) if r.get("arm") in ARMS]
            assert {r["budget_s"] for r in rows} == {json.loads(
                (kdir / "meta.json").read_text())["budget_s"]}


def test_readme_shows_the_recorded_tables() -> None:
    text = PAGE.read_text()
    for line in (DATA / "summary.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            assert line in text, line


def test_summary_cli_refuses_a_folder_without_runs(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "experiments.ab.run" in err
