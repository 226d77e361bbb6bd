"""The machine-code footprint of a forced-wait probe: is the variant the parent plus the wait?

A forced wait (``argusdb/observe/transforms/forced_wait.py``) adds warp shuffles of the loaded
values.
Where a region's loads feed tensor cores from shared memory (a ``cp.async`` pipelined loop, or
tiles moved by tensor descriptors, TMA), the shuffles pull each tile into registers and write it
back to shared memory: the variant then does more than wait. ``derivation_probe`` compares the
data-movement and synchronization instructions of the two binaries' SASS listings
(``sass_movement_opcode``) and every derived value carries the result in its conditions.

Recorded on the H200 (``tools/h200/observe_programs.sh .whl OUT tools/h200/programs_round7.txt``):
``tests/data/gpu/programs/tma`` (a TMA matmul, ``tests/data/programs/tma``) and
``tests/data/gpu/programs/streams`` (an RMSNorm launched on a side stream beside a matmul on
another, ``tests/data/programs/streams``); harness recordings in ``tests/data/gpu``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.ingest.variants import VariantOf, footprint_note, record_check
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.attribution.test_derivation_h200 import GPU, PARENTS, PROBES
from tests.runner.replay import RECORDED, SIGNALS, replay_observe


def _opcodes(sass: Path) -> dict[str, int]:
    """Data-movement opcode counts of an ``nvdisasm`` listing, counted here in Python."""
    import re

    movement = {"LDS", "STS", "LDSM", "LDGSTS", "LDG", "STG", "BAR", "WARPGROUP", "FENCE",
                "MEMBAR", "SYNCS", "UTMALDG", "UTMASTG", "DEPBAR", "LDGDEPBAR"}
    out: dict[str, int] = {}
    for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*)",
                         sass.read_text()):
        if m.group(1) in movement:
            out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def _observe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, region: str,
             *cmd: str) -> tuple[dict[str, Any], Store]:
    code, rep = replay_observe(tmp_path, monkeypatch, name, region, SIGNALS, *cmd)
    assert code == 0 and rep["ok"], rep
    return rep, open_store(tmp_path / "s.duckdb", read_only=True)


def test_tma_tiles_through_registers_make_the_probe_an_upper_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep, st = _observe(tmp_path, monkeypatch, "tma", "matmul_tma/matmul_tma_kernel/mainloop",
                       "python3", "bench.py")
    with st:
        (probe,) = st.rows("SELECT status, footprint, footprint_changes FROM derivation_probe")
        (row,) = st.rows("SELECT value, conditions FROM derived_evidence")
    parent = _opcodes(next((RECORDED / "tma" / "find_launch").glob("binary.*.sass")))
    variant = _opcodes(next((RECORDED / "tma" / "cupti_timing.forced_wait").glob("*.sass")))
    # the SQL's changes are the listings' own counts, opcode by opcode
    expect = [{"opcode": k, "parent": parent.get(k, 0), "variant": variant.get(k, 0)}
              for k in sorted(set(parent) | set(variant)) if parent.get(k) != variant.get(k)]
    assert (probe["status"], probe["footprint"]) == ("ok", "restructured")
    assert probe["footprint_changes"] == expect
    # the tiles now go through registers: more shared-memory loads and stores than the parent
    by = {c["opcode"]: c for c in expect}
    assert by["LDS"]["variant"] > by["LDS"]["parent"]
    assert by["STS"]["variant"] > by["STS"]["parent"]
    cond = json.loads(row["conditions"])
    assert cond["footprint"]["status"] == "restructured"
    assert cond["footprint"]["reading"].startswith("upper bound")
    # the variant doubled the kernel: the report says how to read that
    assert row["value"] > 0.5 * cond["parent_median_ns"]
    (note,) = [n for n in rep["notes"] if n.startswith("exposed_latency of")]
    assert "restructured" in note and "LDS" in note and "upper bound" in note


def test_a_row_kernel_on_a_side_stream_is_the_parent_plus_the_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep, st = _observe(tmp_path, monkeypatch, "streams", "rmsnorm/rms_kernel/load",
                       "python3", "serve.py", "--rows", "2048", "--steps", "12")
    with st:
        (probe,) = st.rows("SELECT footprint, footprint_changes, footprint_listings "
                           "FROM derivation_probe")
        kinds = st.rows("SELECT DISTINCT r.program_version = p.variant_version AS variant, "
                        "r.kind FROM run r JOIN instruction i USING (run_id), "
                        "derivation_probe p ORDER BY ALL")
    assert probe["footprint"] == "probe_only" and probe["footprint_changes"] == []
    assert probe["footprint_listings"]["parent"] != probe["footprint_listings"]["variant"]
    # the parent's listings: the control run's nvdisasm dump (the first, compared) and the
    # Nsight Compute source page; the variant's: the nvdisasm dump of its timing run's binary
    assert kinds == [{"variant": False, "kind": "ncu.source_csv"},
                     {"variant": False, "kind": "nvdisasm.sass"},
                     {"variant": True, "kind": "nvdisasm.sass"}]
    assert not [n for n in rep["notes"] if n.startswith("exposed_latency of")]
    assert rep["evidence"]["exposed_latency"] == {"derived": 1}


def _harness_probe(st: Store, stem: str, listings: bool) -> None:
    """A recorded harness probe: parent timing runs and variant run, each version's SASS
    listing with them when ``listings``."""
    p = PROBES[stem]
    parent = ProgramSource.from_path(PARENTS / f"{p['kernel']}.py")
    opts = {"config": p["config"], "target": "sm_90"}
    files = sorted(GPU.glob(f"{p['kernel']}.{p['config']}.run*.cupti.jsonl"))
    files += [GPU / f"{p['kernel']}.{p['config']}.sass"] if listings else []
    (pv,) = {ingest_path(st, f, parent, dict(opts)).program_version for f in files}
    var = ProgramSource(f"{stem}.py", (GPU / "variants" / f"{stem}.py").read_text())
    files = [GPU / f"{stem}.cupti.jsonl"] + ([GPU / f"{stem}.sass"] if listings else [])
    (vv,) = {ingest_path(st, f, var, dict(opts), VariantOf(pv, p["transform"])).program_version
             for f in files}
    assert record_check(st, vv, pv, p["rel_err_vs_parent"])


@pytest.mark.parametrize(("stem", "footprint", "grew"), [
    ("softmax.default.fw_load", "probe_only", set()),
    ("matmul.bk64_s3.fw_mainloop", "restructured", {"LDS", "STS", "LDSM"}),
    ("attention.causal.fw_load_k", "restructured", {"LDS", "STS"}),
    ("attention.causal.fw_load_q", "restructured", {"LDSM", "WARPGROUP"}),
])
def test_harness_probes(store: Store, stem: str, footprint: str, grew: set[str]) -> None:
    _harness_probe(store, stem, listings=True)
    (probe,) = store.rows("SELECT footprint, footprint_changes FROM derivation_probe")
    assert probe["footprint"] == footprint
    assert grew <= {c["opcode"] for c in probe["footprint_changes"]
                    if c["variant"] > c["parent"]}
    (row,) = store.rows("SELECT conditions FROM derived_evidence")
    cond = json.loads(row["conditions"])
    assert cond["footprint"]["status"] == footprint
    assert (footprint_note(cond) is None) == (footprint == "probe_only")


def test_a_listing_ingested_later_rebuilds_the_derived_conditions(store: Store) -> None:
    """Without the listings the footprint is unverified; ingesting them changes the probe's
    derivation inputs, so the derived row is rebuilt with the comparison."""
    stem = "matmul.bk64_s3.fw_mainloop"
    _harness_probe(store, stem, listings=False)
    (row,) = store.rows("SELECT conditions FROM derived_evidence")
    cond = json.loads(row["conditions"])
    assert cond["footprint"] == {"status": "not_recorded", "changes": None, "listings": None,
                                 "reading": cond["footprint"]["reading"]}
    assert "unverified" in (footprint_note(cond) or "")
    p = PROBES[stem]
    parent = ProgramSource.from_path(PARENTS / f"{p['kernel']}.py")
    opts = {"config": p["config"], "target": "sm_90"}
    pv = ingest_path(store, GPU / f"{p['kernel']}.{p['config']}.sass", parent,
                     dict(opts)).program_version
    var = ProgramSource(f"{stem}.py", (GPU / "variants" / f"{stem}.py").read_text())
    ingest_path(store, GPU / f"{stem}.sass", var, dict(opts), VariantOf(pv, p["transform"]))
    (row,) = store.rows("SELECT conditions FROM derived_evidence")
    assert json.loads(row["conditions"])["footprint"]["status"] == "restructured"
