"""On a GPU: the user's kernel inside torch.compile, observed as the compiled program runs it.

``tests/data/programs/compiled_mlp`` (a copy, checked unmodified afterwards) observed with
``argus observe ... -- python3 mlp.py`` compiled and with ``TORCHDYNAMO_DISABLE=1``, into one
store, then ``argus diff`` between the two binaries of its one ``gelu.py``. The CPU tests of
the same program replay what the H200 recorded (``test_compile_replayed.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "data" / "programs" / "compiled_mlp"
REGION = "gelu/gelu_kernel/load"
SIGNALS = "duration,inst_executed,warp_stall_samples,exposed_latency"


def _argus(args: list[str], cwd: Path, limit: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-m", "argusdb", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=limit, check=False)


def _observe(prog: Path, store: Path, *command: str) -> dict[str, Any]:
    r = _argus(["observe", "--region", REGION, "--signals", SIGNALS, "--store", str(store),
                "--json", "--", *command], prog, 240)
    assert r.returncode == 0, r.stderr[-3000:]
    rep: dict[str, Any] = json.loads(r.stdout.splitlines()[-1])
    assert rep["ok"] and rep["failed"] == [], rep["failed"]
    for sig in ("inst_executed", "warp_stall_samples"):
        a = rep["attribution"][sig]
        assert a["attributed"] == a["observed"] > 0 and a["unattributed_share"] == 0.0, a
    assert rep["evidence"]["exposed_latency"] == {"derived": 1}
    assert rep["evidence"]["duration"]["observed"] > 0
    control = next(store.parent.glob(f"{store.name}.runs/{rep['plan_id']}/find_launch"))
    rep["binary"] = json.loads((control / "result.json").read_text())["binary"]
    return rep


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.py")}


@pytest.mark.gpu
def test_the_compiled_program_and_its_eager_run_are_two_versions_diffed(
        tmp_path: Path) -> None:
    prog = tmp_path / "prog"
    shutil.copytree(PROGRAM, prog)
    before = _digest(prog)
    store = tmp_path / "s.duckdb"
    compiled = _observe(prog, store, "python3", "mlp.py")
    eager = _observe(prog, store, "env", "TORCHDYNAMO_DISABLE=1", "python3", "mlp.py")
    assert _digest(prog) == before
    hc, he = compiled["binary"], eager["binary"]
    assert hc["launcher"] == "inductor" and "launcher" not in he
    assert hc["hash"] != he["hash"] and hc["constexprs"] == he["constexprs"] == {"BLOCK": 1024}
    # the eager run's totals are its own, not the compiled version's runs planned for reuse
    # from the same source text (the runner refused them: another binary)
    refused = [t for t in eager["tasks"] if t.get("reuse_refused")]
    assert refused and all(t["reuse"] is None and t["status"] == "done" for t in refused)
    r = _argus(["diff", str(store), "--region", REGION, "--from", f"binary={he['hash']}",
                "--to", f"binary={hc['hash']}", "--json"], tmp_path, 120)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    assert doc["ok"] and doc["from"]["program_version"] != doc["to"]["program_version"]
    rows = {row["signal"]: row for row in doc["rows"]}
    # one machine code: the same instructions execute under both launchers
    assert rows["inst_executed"]["from_median"] == rows["inst_executed"]["to_median"] > 0
    assert {"exposed_latency", "warp_stall_samples"} <= set(rows)
