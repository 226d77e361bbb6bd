"""The plan's target comes from the option, the stored binary or the device: never a default."""

from __future__ import annotations

from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.observe.planner import target
from argusdb.observe.runner.backends import ReplayBackend
from argusdb.store.embedded import Store
from tests.conftest import DATA, KERNELS


def test_option_wins_and_is_normalized() -> None:
    got = target.resolve({"target": "cuda:90"}, None, None)
    assert got.target == "sm_90" and "target option" in got.how


def test_stored_binary_before_the_device(demo_store: Store,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target, "device_target", lambda: "sm_100")
    src = ProgramSource.from_path(KERNELS / "softmax.py")
    got = target.resolve(None, demo_store, src)
    # the demo store holds the H200 recording of this exact source
    assert (got.target, got.how.startswith("the binary of softmax.py")) == ("sm_90", True)
    other = ProgramSource("elsewhere.py", "import triton\n")
    assert target.resolve(None, demo_store, other).target == "sm_100"


def test_no_option_no_binary_no_gpu_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target, "device_target", lambda: None)
    got = target.resolve({}, None, None)
    assert got.target is None and "no GPU here" in got.how


def test_device_target_reads_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 9.0\necho 9.0\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert target.device_target() == "sm_90"
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert target.device_target() is None


def test_replay_bundle_states_its_device() -> None:
    assert ReplayBackend(DATA / "gpu").device_target() == "sm_90"
