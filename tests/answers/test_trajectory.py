"""Trajectories follow regions by ID, also when a version's lines moved."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from argusdb.answers.trajectory import trajectory
from argusdb.api import Connection
from argusdb.cli import main
from argusdb.errors import NoEvidence
from tests.answers.conftest import MOVED_LINES

REGION = "matmul/matmul_kernel"


def test_region_identity_survives_moved_lines(relabelled: Connection) -> None:
    # No evidence is attributed to sub-regions by cupti alone: no answer, but the request
    # that would produce one (never an empty table).
    with pytest.raises(NoEvidence, match="has no evidence") as exc:
        trajectory(relabelled, [f"{REGION}/mainloop"], ["variant=a", "variant=moved"])
    assert exc.value.requests == [f"argus observe matmul.py --region {REGION}/mainloop "
                                  f"--signals duration"]
    t = trajectory(relabelled, [REGION], ["variant=a", "variant=moved", "variant=b"],
                   ["duration"])
    (s,) = t.series
    a, moved, b = s.points
    assert moved.start_line == a.start_line + MOVED_LINES
    assert moved.end_line == a.end_line + MOVED_LINES
    assert a.median == moved.median == b.median == 210814.5
    assert moved.step_ratio == 1.0 and moved.step_significant is False
    assert a.ci_low is not None and a.ci_low <= a.median <= a.ci_high


def test_cli_trajectory_json(relabelled: Connection) -> None:
    path = relabelled.store.path
    relabelled.close()
    r = CliRunner().invoke(main, ["trajectory", path, "--region", REGION, "--versions",
                                  "variant=a,variant=moved", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [p["label"] for p in doc["series"][0]["points"]] == ["variant=a", "variant=moved"]
