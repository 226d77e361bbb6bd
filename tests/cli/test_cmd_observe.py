"""``argus observe``: the --dry-run --json contract and the no-GPU refusal."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from tests.conftest import GPU_KERNELS, KERNELS

# argusdb.observe is the function; the module is reached through importlib.
observe_mod = importlib.import_module("argusdb.observe")

SOFTMAX = str(KERNELS / "softmax.py")


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_dry_run_json_contract() -> None:
    code, out, _ = run("observe", SOFTMAX, "--region", "softmax/softmax_fwd/load",
                       "--signals", "duration,exposed_latency", "--dry-run", "--json")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["ok", "tasks", "notes", "request"]
    ids = set()
    for t in doc["tasks"]:
        assert {"id", "kind", "depends_on", "run", "why"} <= t.keys()
        assert t["kind"] in {"control", "transform", "collect", "synthesize"}
        assert set(t["depends_on"]) <= ids  # topological order
        assert (t["run"] is not None) == (t["kind"] == "collect")
        assert t["why"]
        ids.add(t["id"])
    assert [t["action"] for t in doc["tasks"]] == [
        "find_launch", "proton_scopes", "cupti_timing", "forced_wait", "proton_instr",
        "cupti_timing", "derive_exposed_latency"]


def test_dry_run_scope_and_text_output() -> None:
    code, out, _ = run("observe", SOFTMAX, "--region", "softmax/softmax_fwd/reduce",
                       "--signals", "duration", "--scope", "warp=each", "--scope", "cta=0-3",
                       "--dry-run")
    assert code == 0
    assert "proton_instr" in out and "intra-kernel timing of region reduce at cta=0-3, " \
        "warp=each" in out


def test_without_gpu_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(observe_mod, "has_gpu", lambda: False)
    monkeypatch.delenv("ARGUS_REPLAY", raising=False)
    code, _, err = run("observe", SOFTMAX, "--region", "softmax/softmax_fwd", "--signals",
                       "duration", "--store", str(tmp_path / "s.duckdb"))
    assert code == 2
    assert "no NVIDIA GPU on this machine" in err and "--dry-run" in err
    assert "Traceback" not in err


def test_unknown_signal_exit_2_json_envelope() -> None:
    code, out, _ = run("observe", SOFTMAX, "--region", "softmax/softmax_fwd", "--signals",
                       "duraton", "--dry-run", "--json")
    assert code == 2
    err = json.loads(out)["errors"][0]
    assert err["code"] == "E200" and "Did you mean 'duration'?" in err["message"]


def test_bad_scope_pair_exit_2() -> None:
    code, _, err = run("observe", SOFTMAX, "--region", "softmax/softmax_fwd", "--signals",
                       "duration", "--scope", "warp", "--dry-run")
    assert code == 2 and "expected KEY=VALUE" in err


def test_replayed_run_prints_task_costs_and_evidence(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from tests.conftest import DATA

    monkeypatch.setattr(observe_mod, "has_gpu", lambda: False)
    monkeypatch.setenv("ARGUS_REPLAY", str(DATA / "gpu"))
    code, out, _ = run("observe", str(GPU_KERNELS / "softmax.py"),
                       "--region", "softmax/softmax_fwd/load", "--signals", "exposed_latency",
                       "--store", str(tmp_path / "s.duckdb"))
    assert code == 0
    assert "derive_exposed_latency" in out and "done" in out
    assert "evidence: exposed_latency 1 derived; duration 100 observed" in out
