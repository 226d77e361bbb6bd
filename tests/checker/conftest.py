"""Stores for the checker tests: real recorded artefacts, plus clearly marked seed rows.

``demo_store``: the shipped H200 CUPTI traces of softmax and matmul (two program versions),
plus the softmax trace ingested a second time under ``num_warps=8`` so that one program has
two versions (same recorded bytes, a second program version: what a rebuild would give).

``seeded_store``: the same, plus SEED rows for evidence the collectors of this branch cannot
ingest yet (they stand in for what the ncu, proton, forced-wait and derivation helpers add):
a counter-replay run with counters from three replay passes and a duration taken under
replay, an instrumented run with per-warp-role values, a forced-wait variant run, and
*derived* rows (inserted into ``derived_evidence`` after a refresh of the materializations,
so the ``evidence`` view shows them with ``evidence_class = 'derived'``). Every seed run has
``kind = 'seed'`` and artefact names starting with ``SEED-``.

``argus_demo_store``: what ``argus demo`` builds (every demo recording of softmax and matmul,
one program version per kernel: each region is of one version).

``dist_store``: recorded 2-H200 torchrun launches of ``tools/h200/xlayer/tp_block.py``
(``tests/data/gpu/xlayer``): the serial version's clean (``events``), profiled (``profiler``)
and forced-synchronous (``forced``) launches and the overlapped version's clean launch, each
its own launch group named after its folder (``xl-serial-events-1`` ...): intervals of two
versions and three interference signatures for the interval algebra's cases.

``samplers_store``: one H200 recording of the layer norm of ``tests/data/programs/model``
(``tests/data/gpu/programs/model``): its binary's SASS and TTGIR, Nsight Compute's source page
and Proton's PC sampling of the same launch, attributed: stall reasons counted by two samplers,
several under one name (``stall_barrier``: 90 samples by ncu, 2,547 by Proton). Ids VN (the
version), RN (the ncu run), RP (the Proton run).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from argusdb import demo
from argusdb.api.metadata import StoreMetadata, _source_sql
from argusdb.checker.metadata import MemoryMetadata, declared_relations
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store import materialize, open_store
from argusdb.store.embedded import Store
from tests.conftest import DEMO, KERNELS

SOFTMAX = "softmax/softmax_fwd"


def build_demo(path: Path) -> dict[str, str]:
    """Ingest the real artefacts; returns the ids tests refer to by name."""
    ids: dict[str, str] = {}
    with open_store(path, create=True) as st:
        sm = ProgramSource.from_path(KERNELS / "softmax.py")
        mm = ProgramSource.from_path(KERNELS / "matmul.py")
        r1 = ingest_path(st, DEMO / "softmax" / "softmax.cupti.jsonl", sm, dict(demo.OPTIONS))
        r2 = ingest_path(st, DEMO / "softmax" / "softmax.cupti.jsonl", sm,
                         {**demo.OPTIONS, "num_warps": "8"})
        r3 = ingest_path(st, DEMO / "matmul" / "matmul.cupti.jsonl", mm, dict(demo.OPTIONS))
        ids.update(V1=r1.program_version, V2=r2.program_version, VM=r3.program_version,
                   R1=r1.run_id, R2=r2.run_id, RM=r3.run_id)
        # The traces' other kernels (torch's): timeline runs of unbound versions of their own.
        assert r1.other is not None and r3.other is not None
        ids.update(TS=r1.other["program_version"], TM=r3.other["program_version"])
    return ids


def _seed_run(st: Store, run_id: str, version: str, **itf: Any) -> None:
    base = {"activity_tracing": False, "torch_profiler": False, "counter_replay": False,
            "replay_passes": None, "section_set": None, "pc_sampling": False,
            "instrumentation": False, "forced_wait": False, "serialized": False}
    base.update(itf)
    st.insert_row("run", {
        "run_id": run_id, "run_seq": st.next_run_seq(), "program_version": version,
        "task_id": f"t-{run_id}", "collector": "seed", "kind": "seed",
        "artefact_name": f"SEED-{run_id}", "artefact_sha256": f"seed-{run_id}",
        "adapter_version": "seed", "ingested_at": datetime.now(UTC).replace(tzinfo=None),
        **base})
    st.insert_row("task", {"task_id": f"t-{run_id}", "kind": "collect", "status": "done"})


def _seed_rows(st: Store, run_id: str, version: str, rows: list[dict[str, Any]]) -> None:
    seq = st.sql("SELECT run_seq FROM run WHERE run_id = ?", [run_id]).fetchone()
    assert seq is not None
    for i, r in enumerate(rows):
        row = {"evidence_id": seq[0] * 2**32 + i, "program_version": version,
               "task_id": f"t-{run_id}", "run_id": run_id, "region_id": SOFTMAX,
               "kernel": "softmax_fwd", "launch": "0", "cta": "all", "sm": "all", "warp": "all",
               "warp_role": "all", "loop_iter": "all", "src_row": i, **r}
        st.insert_row("observed_evidence", row)


def seed(path: Path, ids: dict[str, str]) -> dict[str, str]:
    """Add the SEED runs and rows (see the module docstring)."""
    v1 = ids["V1"]
    ids.update(RN="seed0ncu00000001", RP="seed0proton00001", RF="seed0forcedwait1",
               VF="seedvariant00001", RR="seed0replay00001")
    with open_store(path) as st, st.transaction():
        _seed_run(st, ids["RN"], v1, counter_replay=True, replay_passes=3, section_set="full",
                  device="NVIDIA H200",
                  signature="replay(3 passes, full)+clock:none", timing_clean=False,
                  clock_control="none")
        rows = []
        for launch in ("0", "1"):
            rows += [
                {"launch": launch, "signal": "duration", "value": 31072.0, "unit": "ns",
                 "replay_pass": 1},
                {"launch": launch, "signal": "inst_executed", "value": 11403264.0,
                 "unit": "count", "replay_pass": 1},
                {"launch": launch, "signal": "warp_stall_samples", "value": 21857.0,
                 "unit": "samples", "replay_pass": 2},
                {"launch": launch, "signal": "dram_read_bytes", "value": 134217728.0,
                 "unit": "bytes", "replay_pass": 3}]
        _seed_rows(st, ids["RN"], v1, rows)
        _seed_run(st, ids["RP"], v1, instrumentation=True, activity_tracing=True,
                  device="NVIDIA A100-SXM4-80GB",
                  signature="activity_tracing+instrumentation(proton)", timing_clean=False)
        rows = []
        for launch in ("0", "1"):
            rows += [
                {"launch": launch, "signal": "duration", "value": 35100.0, "unit": "ns"},
                {"launch": launch, "warp_role": "producer", "signal": "busy_ns",
                 "value": 12000.0, "unit": "ns"},
                {"launch": launch, "warp_role": "consumer", "signal": "busy_ns",
                 "value": 21000.0, "unit": "ns"}]
        _seed_rows(st, ids["RP"], v1, rows)
        # V1's kernel replayed from a captured launch (argusdb.observe.runner.replay): clean
        # of probes, but out of its program, a standing of its own
        _seed_run(st, ids["RR"], v1, activity_tracing=True, launch_replay=True,
                  cache_control="all", signature="launch_replay+activity_tracing+cache:all",
                  timing_clean=False, device="NVIDIA H200")
        _seed_rows(st, ids["RR"], v1, [
            {"launch": lc, "signal": "duration", "value": 29500.0, "unit": "ns"}
            for lc in ("0", "1")])
        st.insert_row("program_version", {"program_version": ids["VF"], "program": "softmax",
                                          "parent_version": v1, "transform": "forced_wait:load"})
        _seed_run(st, ids["RF"], ids["VF"], forced_wait=True, activity_tracing=True,
                  signature="activity_tracing+forced_wait", timing_clean=False)
        _seed_rows(st, ids["RF"], ids["VF"], [
            {"launch": lc, "signal": "duration", "value": 38000.0, "unit": "ns"}
            for lc in ("0", "1")])
        # The seeded variant is new input to attribution/derivation: refresh them now, while
        # the store is writable (the tests open it read-only, where a stale store is refused).
        materialize.refresh(st)  # inside this transaction (ensure_fresh opens its own)
        # Derived rows, as the derivation module adds them: about V1, from the variant run.
        # Refresh the materializations first, so these seed rows are not rebuilt away.
        materialize.refresh(st)
        for i, lc in enumerate(("0", "1")):
            st.sql("INSERT INTO derived_evidence BY NAME SELECT ? AS evidence_id, ? AS "
                   "program_version, ? AS task_id, ? AS run_id, ? AS parent_run_id, "
                   "? AS variant_version, ? AS region_id, 'softmax_fwd' AS kernel, "
                   "? AS launch, 'all' AS cta, 'all' AS sm, 'all' AS warp, 'all' AS warp_role, "
                   "'all' AS loop_iter, 'exposed_latency' AS signal, 5500.0 AS value, "
                   "'ns' AS unit, '{\"seed\": true}'::JSON AS conditions",
                   [-1 - i, v1, "t-seed-synthesize", ids["RF"], ids["R1"], ids["VF"], SOFTMAX,
                    lc])
    return ids


def _demo_versions(st: Store) -> dict[str, str]:
    """``argus demo``'s ingest into ``st``; V1: softmax's version, VM: matmul's."""
    return {"V1" if "softmax" in r.path else "VM": r.program_version for r in demo.build(st)}


def build_argus_demo(path: Path) -> dict[str, str]:
    """The store ``argus demo`` builds: every demo recording of softmax and matmul, one
    program version per kernel, so that each region is of one version (V1, VM)."""
    with open_store(path, create=True) as st:
        return _demo_versions(st)


def build_full(path: Path) -> dict[str, str]:
    """Every demo artefact (CUPTI, Nsight Compute source and raw pages, SASS, TTGIR) of
    softmax and matmul, and softmax's again under ``num_warps=8``: three program versions with
    per-instruction, per-region and kernel-wide evidence, attributed (real recordings only)."""
    with open_store(path, create=True) as st:
        ids = _demo_versions(st)
        prog = ProgramSource.from_path(KERNELS / "softmax.py")
        for a in demo.artefacts("softmax"):
            ids["V2"] = ingest_path(st, a, prog, {**demo.OPTIONS, "num_warps": "8"}
                                    ).program_version
        materialize.ensure_fresh(st)
    return ids


def build_samplers(path: Path) -> dict[str, str]:
    """The layer norm's stall reasons from two samplers (see the module docstring)."""
    rec = Path(__file__).resolve().parents[1] / "data" / "gpu" / "programs" / "model"
    prog = ProgramSource.from_path(rec.parents[2] / "programs" / "model" / "fused_norm.py")
    ids: dict[str, str] = {}
    with open_store(path, create=True) as st:
        for key, part in (("", "find_launch/binary.576.sass"), ("", "find_launch/binary.576.ttgir"),
                          ("RN", "ncu_source/ncu.source.csv"),
                          ("RP", "proton_pcsampling/pcs.hatchet")):
            res = ingest_path(st, rec / part, prog, {"target": "sm_90"})
            ids["VN"] = res.program_version
            if key:
                ids[key] = res.run_id
        materialize.ensure_fresh(st)
    return ids


#: Launches of the dist store: (version, recorder modes).
DIST_LAUNCHES = (("serial", ("events", "profiler", "forced")), ("overlap", ("events",)))


def build_dist(path: Path) -> dict[str, str]:
    """The recorded torchrun launches (see the module docstring); ids DS, DO: the versions."""
    from argusdb.ingest.ranks import ingest_launch

    xl = Path(__file__).resolve().parents[1] / "data" / "gpu" / "xlayer"
    src = ProgramSource.from_path(xl.parents[3] / "tools" / "h200" / "xlayer" / "tp_block.py")
    ids: dict[str, str] = {}
    with open_store(path, create=True) as st:
        for version, modes in DIST_LAUNCHES:
            for mode in modes:
                launch = ingest_launch(st, xl / f"xl-{version}-{mode}-1", src,
                                       {"version": version, "target": "sm_90"})
                ids["DS" if version == "serial" else "DO"] = launch.runs[0].program_version
        with st.transaction():
            materialize.refresh(st)
    return ids


def _read_only(path: Path) -> Iterator[Store]:
    st = open_store(path, read_only=True)
    yield st
    st.close()


def _store_fixtures(name: str, build: Callable[[Path], dict[str, str]]) -> tuple[Any, Any]:
    """The session fixtures ``<name>_built`` (a store made once by ``build``: its path and ids)
    and ``<name>_store`` (that store opened read-only)."""

    @pytest.fixture(scope="session", name=f"{name}_built")
    def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
        path = tmp_path_factory.mktemp(f"checker_{name}") / f"{name}.duckdb"
        return path, build(path)

    @pytest.fixture(scope="session", name=f"{name}_store")
    def store(request: pytest.FixtureRequest) -> Iterator[Store]:
        yield from _read_only(request.getfixturevalue(f"{name}_built")[0])

    return built, store


dist_built, dist_store = _store_fixtures("dist", build_dist)
samplers_built, samplers_store = _store_fixtures("samplers", build_samplers)
argus_demo_built, argus_demo_store = _store_fixtures("argus_demo", build_argus_demo)
full_built, full_store = _store_fixtures("full", build_full)


@pytest.fixture(scope="session")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("checker")
    demo_path, seeded_path = root / "demo.duckdb", root / "seeded.duckdb"
    ids = build_demo(demo_path)
    shutil.copy(demo_path, seeded_path)
    ids = seed(seeded_path, ids)
    return demo_path, seeded_path, ids


@pytest.fixture(scope="session")
def ids(_built: tuple[Path, Path, dict[str, str]]) -> dict[str, str]:
    return _built[2]


@pytest.fixture(scope="session")
def seeded_path(_built: tuple[Path, Path, dict[str, str]]) -> Path:
    return _built[1]


@pytest.fixture(scope="session")
def demo_path(_built: tuple[Path, Path, dict[str, str]]) -> Path:
    return _built[0]


@pytest.fixture(scope="session")
def seeded_store(seeded_path: Path) -> Iterator[Store]:
    yield from _read_only(seeded_path)


@pytest.fixture(scope="session")
def demo_store(demo_path: Path) -> Iterator[Store]:
    yield from _read_only(demo_path)


def memory_of(st: Store) -> MemoryMetadata:
    """An in-memory Metadata holding what ``st`` holds: every row of every evidence relation
    with its metadata columns, and the plain tables subqueries read."""
    meta = StoreMetadata.of(st)
    rows = {rel: st.rows(_source_sql(rel, meta.columns(rel), meta.columns("run")))
            for rel, cols in declared_relations().items() if cols}
    tables = {t: st.rows(f"SELECT * FROM {t}")
              for t in ("run", "program_version", "evidence", "kernel_launch")}
    return MemoryMetadata(rows, tables)


@pytest.fixture(scope="session")
def memory_stores(seeded_store: Store, demo_store: Store, full_store: Store,
                  dist_store: Store, samplers_store: Store) -> dict[str, MemoryMetadata]:
    return {"seeded": memory_of(seeded_store), "demo": memory_of(demo_store),
            "full": memory_of(full_store), "dist": memory_of(dist_store),
            "samplers": memory_of(samplers_store)}
