"""``argus observe ... -- COMMAND`` of a program whose tasks were recorded on the H200.

``tests/data/gpu/programs/<name>/`` holds each task's folder as ``tools/h200/observe_programs.sh``
recorded it; :func:`replay_observe` copies it, runs the CLI in ``tests/data/programs/<name>``
with ``ARGUS_REPLAY`` pointing at the copy, and returns the exit code and the ``--json`` report.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argusdb.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "data" / "programs"
RECORDED = ROOT / "tests" / "data" / "gpu" / "programs"
#: What the H200 runs asked for (tools/h200/observe_programs.sh's default signals).
SIGNALS = "duration,inst_executed,warp_stall_samples,exposed_latency"


def replay_observe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, region: str,
                   signals: str, *cmd: str, replay: bool = False) -> tuple[int, dict[str, Any]]:
    """Observe ``region`` of recorded program ``name`` into ``tmp_path/s.duckdb``.

    The bundles were recorded by the per-run path (every collection ran the program), so the
    request is planned as that path plans it (``--no-replay``) unless ``replay``."""
    bundle = tmp_path / "bundle"
    shutil.copytree(RECORDED / name, bundle)
    monkeypatch.chdir(PROGRAMS / name)
    monkeypatch.setenv("ARGUS_REPLAY", str(bundle))
    r = CliRunner().invoke(main, ["observe", "--region", region, "--signals", signals,
                                  "--store", str(tmp_path / "s.duckdb"), "--json",
                                  *([] if replay else ["--no-replay"]), "--", *cmd])
    return r.exit_code, json.loads(r.stdout.splitlines()[-1])
