"""Filling a store run by run: derivation rebuilds only the groups whose inputs changed, and its
rows equal a build from scratch (recorded H200 forced-wait variants and the 2-H200 launches)."""

from __future__ import annotations

from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.ingest.ranks import ingest_launch
from argusdb.ingest.variants import VariantOf, record_check
from argusdb.store import materialize
from argusdb.store.embedded import Store
from tests.attribution.test_derivation_h200 import GPU, PARENTS, PROBES

ROOT = Path(__file__).resolve().parents[2]
XLAYER = ROOT / "tests" / "data" / "gpu" / "xlayer"
TP_BLOCK = ROOT / "tools" / "h200" / "xlayer" / "tp_block.py"


@pytest.fixture
def rebuilt(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The derivation groups each refresh rebuilt, in order (one list per refresh)."""
    seen: list[list[str]] = []
    refresh = materialize.refresh

    def spy(store: Store, written: materialize.Written | None = None
            ) -> materialize.RefreshReport:
        report = refresh(store, written)
        seen.append(report.derivation_groups)
        return report

    monkeypatch.setattr(materialize, "refresh", spy)
    return seen


def same_as_scratch(store: Store) -> list[dict[str, object]]:
    """The derived rows, asserted equal to a whole build over the current inputs."""
    q = "SELECT * FROM {} ORDER BY evidence_id"
    rows = store.rows(q.format("derived_evidence"))
    assert rows == store.rows(q.format("_derived_evidence_build"))
    return rows


def parent_run(store: Store, stem: str, run: str) -> str:
    p = PROBES[stem]
    parent = ProgramSource.from_path(PARENTS / f"{p['kernel']}.py")
    return ingest_path(store, GPU / f"{p['kernel']}.{p['config']}.{run}.cupti.jsonl", parent,
                       {"config": p["config"], "target": "sm_90"}).program_version


def variant(store: Store, stem: str, parent_version: str) -> str:
    p = PROBES[stem]
    parent = ProgramSource.from_path(PARENTS / f"{p['kernel']}.py")
    text = (GPU / "variants" / f"{stem}.py").read_text()
    return ingest_path(store, GPU / f"{stem}.cupti.jsonl", ProgramSource(parent.name, text),
                       {"config": p["config"], "target": "sm_90"},
                       VariantOf(parent_version, p["transform"])).program_version


def test_forced_wait_run_by_run_equals_a_whole_build(
        store: Store, rebuilt: list[list[str]]) -> None:
    sm = "softmax.default.fw_load"
    mm = "matmul.bk64_s3.fw_mainloop"
    sv = variant(store, sm, parent_run(store, sm, "run1"))
    assert record_check(store, sv, parent_version(store, sv), 0.0)
    assert len(same_as_scratch(store)) == 1
    mp = parent_run(store, mm, "run1")
    mv = variant(store, mm, mp)
    assert rebuilt[-1] == [f"exposed_latency:{mv}"]   # the softmax probe is left as built
    record_check(store, mv, mp, 0.0)
    first = {r["variant_version"]: r for r in same_as_scratch(store)}
    # a newer parent run under the same collection: the matmul probe pairs with it, alone
    parent_run(store, mm, "run2")
    assert rebuilt[-1] == [f"exposed_latency:{mv}"]
    now = {r["variant_version"]: r for r in same_as_scratch(store)}
    assert now[sv] == first[sv] and now[mv]["parent_run_id"] != first[mv]["parent_run_id"]
    # runs no group reads: a source page of the parent (not timing-clean), another kernel
    n = len(rebuilt)
    ingest_path(store, GPU / "softmax.default.source.csv",
                ProgramSource.from_path(PARENTS / "softmax.py"),
                {"config": "default", "target": "sm_90"})
    ingest_path(store, GPU / "attention.full.run1.cupti.jsonl",
                ProgramSource.from_path(PARENTS / "attention.py"),
                {"config": "full", "target": "sm_90"})
    assert rebuilt[n:] == [[], []]
    assert same_as_scratch(store) == sorted(now.values(), key=lambda r: r["evidence_id"])
    # a whole rebuild (no group recorded) gives the same rows
    store.sql("DELETE FROM materialization")
    with store.transaction():
        report = materialize.refresh(store)
    assert len(report.derivation_groups) == 2
    assert same_as_scratch(store) == sorted(now.values(), key=lambda r: r["evidence_id"])


def parent_version(store: Store, variant_version: str) -> str:
    row = store.sql("SELECT parent_version FROM program_version WHERE program_version = ?",
                    [variant_version]).fetchone()
    assert row is not None
    return str(row[0])


def test_distributed_launches_one_by_one_equal_a_whole_build(
        store: Store, rebuilt: list[list[str]]) -> None:
    prog = ProgramSource.from_path(TP_BLOCK)
    for name in ("xl-serial-events-1", "xl-serial-forced-1", "xl-serial-events-2",
                 "xl-overlap-events-1", "xl-overlap-forced-1"):
        top = store.sql("SELECT coalesce(max(run_seq), 0) FROM run").fetchone()
        n = len(rebuilt)
        ingest_launch(store, XLAYER / name, program=prog,
                      options={"version": name.split("-")[1], "target": "sm_90"})
        rows = same_as_scratch(store)
        # a launch rebuilds its own launch group's offsets and its version's exposure only
        new = store.rows("SELECT DISTINCT launch_group, program_version FROM run "
                         "WHERE run_seq > ?", [top[0] if top else 0])
        mine = {g for gs in rebuilt[n:] for g in gs}
        assert mine and mine <= {*(f"clock_offset:{r['launch_group']}" for r in new),
                                 *(f"exposed_communication:{r['program_version']}" for r in new)}
    assert {r["signal"] for r in rows} == {"clock_offset", "exposed_communication"}
    assert len({r["program_version"] for r in rows if r["signal"] == "exposed_communication"}) == 2


def test_a_whole_build_of_older_code_is_replaced_by_groups(store: Store) -> None:
    sm = "softmax.default.fw_load"
    sv = variant(store, sm, parent_run(store, sm, "run1"))
    record_check(store, sv, parent_version(store, sv), 0.0)
    rows = same_as_scratch(store)
    # as the previous release left a store: one 'derivation' row for the whole build, and a
    # derived row no input defines any more
    with store.transaction():
        store.sql("DELETE FROM materialization WHERE name IN ('derivation', 'inputs')")
        store.sql("INSERT INTO materialization VALUES ('derivation', '', 'x', '', 0, 2, now())")
        store.sql("INSERT INTO derived_evidence SELECT * REPLACE (-7 AS evidence_id, "
                  "'gone' AS variant_version) FROM derived_evidence")
    assert materialize.stale(store)[1]
    assert materialize.ensure_fresh(store).derivation_groups == ["", f"exposed_latency:{sv}"]
    assert same_as_scratch(store) == rows
    assert store.rows("SELECT program_version FROM materialization WHERE name = 'derivation'"
                      ) == [{"program_version": f"exposed_latency:{sv}"}]
