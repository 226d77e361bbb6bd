"""Exposed latency from real forced-wait variants recorded on the H200 (tests/data/gpu)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.ingest.variants import VariantOf, record_check
from argusdb.store.embedded import Store
from tests.conftest import DATA, GPU_KERNELS

GPU = DATA / "gpu"
PARENTS = GPU_KERNELS
PROBES = {p["stem"]: p for p in json.loads((GPU / "probes.json").read_text())
          ["sequential_cold"]["probes"]}


def probe(store: Store, stem: str, check: bool = True) -> tuple[str, str]:
    """Ingest a probe's parent timing runs and variant run; returns (parent, variant) versions."""
    p = PROBES[stem]
    parent = ProgramSource.from_path(PARENTS / f"{p['kernel']}.py")
    opts = {"config": p["config"], "target": "sm_90"}
    runs = sorted(GPU.glob(f"{p['kernel']}.{p['config']}.run*.cupti.jsonl"))
    versions = {ingest_path(store, r, parent, dict(opts)).program_version for r in runs}
    assert len(versions) == 1  # run1 and run2 measure one program version
    pv = versions.pop()
    text = (GPU / "variants" / f"{stem}.py").read_text()
    vv = ingest_path(store, GPU / f"{stem}.cupti.jsonl", ProgramSource(parent.name, text),
                     dict(opts), VariantOf(pv, p["transform"])).program_version
    if check:
        assert record_check(store, vv, pv, p["rel_err_vs_parent"])
    return pv, vv


def durations(path: Path) -> list[float]:
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [float(r["end"] - r["start"]) for r in recs if r["kind"] == "CONCURRENT_KERNEL"]


def tukey_median(d: list[float]) -> float:
    """The derivation's rule, restated: drop launch 0, drop values outside 1.5 IQR, median."""
    x = np.array(d[1:])
    q1, q3 = np.percentile(x, [25, 75])
    return float(np.median(x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]))


def derived(store: Store) -> list[dict]:
    rows = store.rows("SELECT region_id, program_version, value, lineage FROM evidence "
                      "WHERE evidence_class = 'derived' ORDER BY region_id")
    for r in rows:
        r["lineage"] = json.loads(r["lineage"])
    return rows


def test_no_derived_value_before_the_variant_is_checked(store: Store) -> None:
    probe(store, "softmax.default.fw_load", check=False)
    assert derived(store) == []
    assert store.rows("SELECT status FROM derivation_probe") == [{"status": "unchecked"}]


def test_softmax_load_exposes_no_measurable_latency(store: Store) -> None:
    pv, vv = probe(store, "softmax.default.fw_load")
    (row,) = derived(store)
    expect = tukey_median(durations(GPU / "softmax.default.fw_load.cupti.jsonl")) - \
        tukey_median(durations(GPU / "softmax.default.run1.cupti.jsonl"))
    assert row["value"] == pytest.approx(expect) == 32.0
    cond = row["lineage"]["conditions"]
    assert (row["region_id"], row["program_version"], cond["variant_version"]) == (
        "softmax/softmax_fwd/load", pv, vv)
    # softmax reduces right after its load: forcing the wait there changes nothing measurable
    assert cond["above_noise"] is False and cond["parent_iqr_ns"] > 32
    assert (len(cond["kept"]["variant"]), len(cond["kept"]["parent"])) == (49, 49)
    assert cond["check"] == {"rel_err": 0.0, "tolerance": 1e-5, "passed": True}
    assert cond["signature"] == "activity_tracing"


def test_matmul_mainloop_exposes_the_pipelined_load_latency(store: Store) -> None:
    probe(store, "matmul.bk64_s3.fw_mainloop")
    (row,) = derived(store)
    lin = row["lineage"]
    # two parent runs under the same collection: the newest (run2) is the reference
    run2 = store.sql("SELECT run_id FROM run WHERE artefact_name = "
                     "'matmul.bk64_s3.run2.cupti.jsonl'").fetchone()
    assert run2 is not None and lin["parent_run_id"] == run2[0]
    expect = tukey_median(durations(GPU / "matmul.bk64_s3.fw_mainloop.cupti.jsonl")) - \
        tukey_median(durations(GPU / "matmul.bk64_s3.run2.cupti.jsonl"))
    assert row["value"] == pytest.approx(expect) == 309597.0
    cond = lin["conditions"]
    assert cond["above_noise"] is True
    reasons = {(d["side"], d["launch"]): d["reason"] for d in cond["dropped"]}
    assert reasons == {("parent", 0): "warmup", ("parent", 1): "outlier",
                       ("parent", 2): "outlier", ("parent", 23): "outlier",
                       ("parent", 57): "outlier", ("variant", 0): "warmup"}
    assert len(lin["source_evidence_ids"]) == len(cond["kept"]["variant"]) + \
        len(cond["kept"]["parent"])
