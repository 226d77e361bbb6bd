"""The A/B end to end on a CPU (``--dry``: interpreter, tiny shapes, real sm_90 listings), and
the recorded H200 stores through argus trajectory / diff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from argusdb.api import connect
from argusdb.cli import main as argus
from experiments.ab.tests.conftest import log_rows

ROOT = Path(__file__).resolve().parents[3]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]))


def test_dry_run_binds_every_candidate_to_its_parent_and_move(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "experiments.ab.run", "--out", str(tmp_path), "--dry",
                        "--kernels", "layernorm", "--seeds", "0", "--budget-x", "3",
                        "--trials", "2", "--cap", "3", "--verify-rounds", "1"],
                       capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    rows = log_rows(tmp_path / "layernorm")
    cands = [x for x in rows if x["kind"] == "candidate"]
    assert {x["arm"] for x in cands} == {"latency", "evidence"}
    ev = [x for x in rows if x["kind"] == "evidence"]
    assert ev and ev[0]["probe"] is True and ev[0]["static_sufficient"] is True
    assert ev[0]["unattributed_share"] <= 0.05 and 0 < ev[0]["load_share"] < 1
    with connect(tmp_path / "layernorm" / "store.duckdb", read_only=True) as db:
        vs = {v["program_version"]: v for v in db.query(
            "SELECT program_version, parent_version, transform FROM program_version"
        ).to_pylist()}
    for c in cands:
        if c["version"] is not None:
            assert vs[c["version"]]["parent_version"] == c["parent"]
            assert vs[c["version"]]["transform"] == "move:" + c["move"]
    probes = [v for v in vs.values() if (v["transform"] or "").startswith("forced_wait:")]
    assert probes and all(p["parent_version"] in vs for p in probes)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["kernels"]["layernorm"]["meta"]["gpu"] is False


def test_run_refuses_an_unknown_kernel(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "experiments.ab.run", "--out", str(tmp_path), "--dry",
                        "--kernels", "matmull"], capture_output=True, text=True, env=_env(),
                       cwd=ROOT)
    assert r.returncode == 2 and "matmull" in r.stderr and "matmul" in r.stderr
    assert not any(tmp_path.iterdir())


def _chain(rows: list[dict], arm: str, seed: int) -> list[str]:
    steps = [r for r in rows if r.get("arm") == arm and r.get("seed") == seed]
    return [r["version"] for r in steps if r["kind"] in ("base", "candidate")
            and r.get("accepted")]


def test_trajectory_and_diff_show_an_arm_on_the_recorded_store(recorded: list[Path]) -> None:
    kdir = recorded[1] / "attention"
    rows = log_rows(kdir)
    chain = _chain(rows, "evidence", 4)
    assert len(chain) >= 3
    store = str(kdir / "store.duckdb")
    r = CliRunner().invoke(argus, ["trajectory", store, "--region", "attention/attn_fwd",
                                   "--versions", ",".join(chain), "--signal", "duration",
                                   "--json"])
    assert r.exit_code == 0, r.output
    pts = json.loads(r.stdout)["series"][0]["points"]
    assert len(pts) == len(chain)
    meds = [p["median"] for p in pts]
    assert meds == sorted(meds, reverse=True)  # every accepted step was faster
    r = CliRunner().invoke(argus, ["diff", store, "--region", "attention/attn_fwd", "--from",
                                   chain[0], "--to", chain[-1], "--signal", "duration",
                                   "--json"])
    assert r.exit_code == 0, r.output
    assert "lower" in r.stdout
