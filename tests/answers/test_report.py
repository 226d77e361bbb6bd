"""Reports carry classes, provenance, repeat statistics and verdicts, from real recordings."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from argusdb.answers.report import _judge, report
from argusdb.api import Connection
from argusdb.cli import main
from tests.answers.conftest import MATMUL_TRACE

REGION = "matmul/matmul_kernel"


def _launch_durations() -> list[float]:
    out = []
    for line in MATMUL_TRACE.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") in ("KERNEL", "CONCURRENT_KERNEL") and rec["name"] == "matmul_kernel":
            out.append(float(rec["end"] - rec["start"]))
    return out


def test_report_of_observed_durations(relabelled: Connection) -> None:
    rep = report(relabelled, REGION, ["variant=a"])
    (c,) = rep.claims
    d = np.asarray(_launch_durations())
    assert c.signal == "duration" and c.evidence_class == "observed" and c.n == len(d) == 20
    assert c.median == float(np.median(d))
    q1, q3 = np.percentile(d, [25, 75])
    assert c.iqr == float(q3 - q1)
    assert c.cv == float(np.std(d, ddof=1) / np.mean(d))
    assert c.verdict == "sufficient" and c.association_entropy == 0.0
    assert c.signature == "activity_tracing" and c.timing_clean
    assert len(c.runs) == 1 and c.tasks == [f"t-{c.runs[0]}"]
    assert rep.versions[0]["lines"] == {"start_line": 5, "end_line": 20}


def test_report_all_versions_cli(relabelled: Connection) -> None:
    path = relabelled.store.path
    relabelled.close()
    r = CliRunner().invoke(main, ["report", path, "--region", REGION, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["policy"]["max_entropy_bits"] == 0.5
    assert len(doc["claims"]) == 3  # variant=a, variant=b, variant=moved
    assert {c["verdict"] for c in doc["claims"]} == {"sufficient"}


def test_policy_thresholds() -> None:
    assert _judge("attributed", 0.47, False, 0.5)[0] == "sufficient"
    verdict, reason = _judge("attributed", 0.9, False, 0.5)
    assert verdict == "insufficient" and "high-entropy" in reason
    assert _judge("derived", 0.0, False, 0.5)[0] == "insufficient"
    assert _judge("derived", 0.0, True, 0.5)[0] == "sufficient"


def test_python_entry_point(relabelled: Connection) -> None:
    import argusdb

    path = relabelled.store.path
    relabelled.close()
    rep = argusdb.report(path, REGION, ["variant=b"])
    assert [(c.signal, c.verdict) for c in rep.claims] == [("duration", "sufficient")]
