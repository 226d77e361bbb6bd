"""observe(): the Python front door, planning without a GPU."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import argusdb
from argusdb.store.embedded import Store
from tests.conftest import KERNELS

# argusdb.observe is the function; the module is reached through importlib.
observe_mod = importlib.import_module("argusdb.observe")

SOFTMAX = KERNELS / "softmax.py"


def test_argusdb_observe_is_the_function() -> None:
    assert argusdb.observe is observe_mod.observe


def test_dry_run_plans_without_store(tmp_path: Path) -> None:
    obs = argusdb.observe("softmax/softmax_fwd", "duration,inst_executed",
                          store=tmp_path / "none.duckdb", source=SOFTMAX, dry_run=True)
    assert [t.action for t in obs.plan.tasks] == ["find_launch", "cupti_timing", "ncu_source",
                                                  "attribute"]
    assert obs.evidence is None
    assert obs.report == {"plan_id": obs.plan.plan_id, "tasks": 4, "runs": 2, "reused": [],
                          "notes": [], "estimate": {"wall_s": 0.0, "gpu_s": 0.0, "estimated": 0,
                                                    "unknown": [t.id for t in obs.plan.tasks],
                                                    "basis": [], "program_runs": 0}}
    assert not (tmp_path / "none.duckdb").exists()  # a dry run creates no store


def test_dry_run_reuses_from_an_existing_store(demo_store: Store) -> None:
    obs = argusdb.observe("softmax/softmax_fwd", ["duration"], store=demo_store,
                          source=SOFTMAX, dry_run=True)
    assert obs.report["reused"] == [obs.plan.tasks[1].id]


def test_running_without_gpu_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setattr(observe_mod, "has_gpu", lambda: False)
    monkeypatch.delenv("ARGUS_REPLAY", raising=False)
    with pytest.raises(observe_mod.NoGpuError, match="Use --dry-run") as exc:
        argusdb.observe("softmax/softmax_fwd", ["duration"], store=tmp_path / "s.duckdb",
                        source=SOFTMAX)
    assert exc.value.exit_code == 2
    assert not (tmp_path / "s.duckdb").exists()


def test_running_without_runner_says_a_gpu_runner_is_needed(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setattr(observe_mod, "has_gpu", lambda: True)
    monkeypatch.setitem(sys.modules, "argusdb.observe.runner", None)  # import fails as if absent
    with pytest.raises(observe_mod.RunnerMissingError, match="a GPU runner is needed"):
        argusdb.observe("softmax/softmax_fwd", ["duration"], store=tmp_path / "s.duckdb",
                        source=SOFTMAX)
