"""Attribution SQL modules on seed rows: seed rows + query + expected rows.

The kernel is the real softmax.py (regions _entry 8-11, load 12-13, reduce 14-17, store 18-19);
the rows are made up so that every path is taken: own lines, library lines through call sites,
a library line shared by two regions, a PC resolved by a listing, and rows with no region.
"""

from __future__ import annotations

from typing import Any

import pytest
from scipy.stats import entropy

from argusdb.collectors.regions import ProgramSource
from argusdb.store import materialize, open_store
from argusdb.store.embedded import Store
from tests.attribution import seed
from tests.conftest import KERNELS

K = "softmax_fwd"
R = "softmax/softmax_fwd"


def _at(pc: int, source_file: str | None, source_line: int | None, value: float,
        signal: str = "inst_executed", **extra: Any) -> dict[str, Any]:
    """An observed row of the kernel at ``pc`` (and, where given, its source line)."""
    row = {"kernel": K, "pc": pc, "signal": signal, "value": value, **extra}
    if source_file is not None:
        row.update(source_file=source_file, source_line=source_line)
    return row


@pytest.fixture
def seeded(store: Store) -> Store:
    seed.version(store, "v1", ProgramSource.from_path(KERNELS / "softmax.py"))
    seed.run(store, "ttgir", "v1", collector="triton")
    seed.rows(store, "inline_site", "ttgir", [
        {"kernel": K, "callee_file": "standard.py", "callee_line": 191,
         "caller_file": "softmax.py", "caller_line": 15, "n_ops": 3},
        {"kernel": K, "callee_file": "standard.py", "callee_line": 263,
         "caller_file": "softmax.py", "caller_line": 17, "n_ops": 2},
        {"kernel": K, "callee_file": "standard.py", "callee_line": 263,
         "caller_file": "softmax.py", "caller_line": 19, "n_ops": 1}])
    seed.run(store, "sass", "v1", collector="nvdisasm")
    seed.rows(store, "instruction", "sass", [
        {"kernel": K, "pc": 96, "sass": "FADD", "source_file": "softmax.py", "source_line": 16}])
    seed.run(store, "r1", "v1")
    seed.evidence(store, "r1", [
        _at(0, "softmax.py", 9, 10),
        _at(16, "standard.py", 191, 20),
        _at(32, "standard.py", 263, 30),
        _at(32, "standard.py", 263, 6, "warp_stall_samples", unit="samples"),
        _at(48, "softmax.py", 2, 5),
        _at(64, None, None, 7),
        _at(96, None, None, 4),
        _at(112, "softmax.py", 19, 32, "avg_threads_executed", unit="threads")])
    materialize.ensure_fresh(store)
    return store


def breakdown(store: Store, run_id: str, signal: str = "inst_executed") -> dict[str, float]:
    return {r["region_id"]: r["value"] for r in store.rows(
        "SELECT region_id, value FROM evidence WHERE evidence_class = 'attributed' "
        "AND run_id = ? AND signal = ? ORDER BY region_id", [run_id, signal])}


def test_line_regions_follow_spans_and_call_sites(seeded: Store) -> None:
    got = seeded.rows("SELECT source_file, source_line, region_id, caller_lines, weight_ops, "
                      "via, n_regions FROM attribution_line_region "
                      "WHERE source_file = 'standard.py' OR source_line IN (9, 16) ORDER BY ALL")
    assert got == [
        {"source_file": "softmax.py", "source_line": 9, "region_id": f"{R}/_entry",
         "caller_lines": [9], "weight_ops": 1, "via": "line", "n_regions": 1},
        {"source_file": "softmax.py", "source_line": 16, "region_id": f"{R}/reduce",
         "caller_lines": [16], "weight_ops": 1, "via": "line", "n_regions": 1},
        {"source_file": "standard.py", "source_line": 191, "region_id": f"{R}/reduce",
         "caller_lines": [15], "weight_ops": 3, "via": "callsite", "n_regions": 1},
        {"source_file": "standard.py", "source_line": 263, "region_id": f"{R}/reduce",
         "caller_lines": [17], "weight_ops": 2, "via": "callsite", "n_regions": 2},
        {"source_file": "standard.py", "source_line": 263, "region_id": f"{R}/store",
         "caller_lines": [19], "weight_ops": 1, "via": "callsite", "n_regions": 2}]


def test_without_mapping_run_shared_line_splits_by_ttgir_ops(seeded: Store) -> None:
    assert breakdown(seeded, "r1") == pytest.approx({
        f"{R}/_entry": 10, f"{R}/reduce": 20 + 4 + 30 * 2 / 3, f"{R}/store": 30 / 3,
        f"{R}/_unattributed": 5 + 7})
    shared = seeded.rows("SELECT region_id, share, association_entropy, basis, mapping_run_id "
                         "FROM attribution_share WHERE pc = 32 AND signal = 'inst_executed' "
                         "ORDER BY region_id")
    h = entropy([2 / 3, 1 / 3], base=2)
    assert shared == [
        {"region_id": f"{R}/reduce", "share": pytest.approx(2 / 3),
         "association_entropy": pytest.approx(h), "basis": "ttgir_n_ops",
         "mapping_run_id": None},
        {"region_id": f"{R}/store", "share": pytest.approx(1 / 3),
         "association_entropy": pytest.approx(h), "basis": "ttgir_n_ops",
         "mapping_run_id": None}]


def test_unattributed_rows_never_vanish_and_ratios_are_not_split(seeded: Store) -> None:
    got = seeded.rows("SELECT pc, source_file, source_line, region_id, basis, n_candidates "
                      "FROM attribution_share WHERE region_id LIKE '%_unattributed' "
                      "OR pc = 96 ORDER BY pc")
    assert got == [
        {"pc": 48, "source_file": "softmax.py", "source_line": 2,
         "region_id": f"{R}/_unattributed", "basis": "unattributed", "n_candidates": 0},
        {"pc": 64, "source_file": None, "source_line": None,
         "region_id": f"{R}/_unattributed", "basis": "unattributed", "n_candidates": 0},
        {"pc": 96, "source_file": "softmax.py", "source_line": 16,
         "region_id": f"{R}/reduce", "basis": "line", "n_candidates": 1}]
    assert breakdown(seeded, "r1", "avg_threads_executed") == {}


def test_region_rows_carry_value_weighted_entropy_and_lineage(seeded: Store) -> None:
    row = seeded.rows("SELECT * FROM region_attribution WHERE run_id = 'r1' "
                      "AND region_id = ? AND signal = 'inst_executed'", [f"{R}/reduce"])[0]
    h = entropy([2 / 3, 1 / 3], base=2)
    assert row["association_entropy"] == pytest.approx(h * 20 / (20 + 4 + 20))
    assert row["n_source_rows"] == 3 and row["n_shared_rows"] == 1
    seq = seeded.sql("SELECT run_seq FROM run WHERE run_id = 'r1'").fetchone()
    assert seq is not None
    assert row["source_evidence_ids"] == [seq[0] * 2**32 + i for i in (1, 2, 6)]
    ev = seeded.rows("SELECT evidence_id < 0 AS neg, lineage::JSON->>'task_id' AS task "
                     "FROM evidence WHERE evidence_id = ?", [row["evidence_id"]])
    assert ev == [{"neg": True, "task": "t-r1"}]


def test_mapping_run_sets_the_split_and_adding_it_refreshes(seeded: Store) -> None:
    seed.run(seeded, "r2", "v1")
    seed.evidence(seeded, "r2", [
        _at(16, "standard.py", 191, 60),
        _at(128, "softmax.py", 19, 20),
        _at(32, "standard.py", 263, 999)])
    # attribution of v1 is stale; derivation is not (v1 is no variant, parent or launch)
    assert materialize.stale(seeded) == (["v1"], False)
    report = materialize.ensure_fresh(seeded)
    assert report.rebuilt_versions == ["v1"]
    # r1 is split by r2's counts of instructions that are not shared: reduce 60, store 20.
    assert breakdown(seeded, "r1")[f"{R}/reduce"] == pytest.approx(24 + 30 * 0.75)
    assert breakdown(seeded, "r1")[f"{R}/store"] == pytest.approx(30 * 0.25)
    row = seeded.rows("SELECT association_entropy, mapping_run_ids FROM region_attribution "
                      "WHERE run_id = 'r1' AND region_id = ? AND signal = 'inst_executed'",
                      [f"{R}/store"])[0]
    assert row == {"association_entropy": pytest.approx(entropy([0.75, 0.25], base=2)),
                   "mapping_run_ids": ["r2"]}
    # r2's own mapping run is r1 (the newest *other* run): store counted nothing there.
    r2 = seeded.rows("SELECT region_id, share, association_entropy, mapping_run_id "
                     "FROM attribution_share WHERE run_id = 'r2' AND pc = 32 ORDER BY 1")
    assert r2 == [{"region_id": f"{R}/reduce", "share": 1.0, "association_entropy": 0.0,
                   "mapping_run_id": "r1"},
                  {"region_id": f"{R}/store", "share": 0.0, "association_entropy": 0.0,
                   "mapping_run_id": "r1"}]


def test_conservation_holds_per_run_kernel_signal(seeded: Store) -> None:
    got = seeded.rows("SELECT run_id, signal, observed, attributed, ok "
                      "FROM attribution_conservation ORDER BY ALL")
    assert got == [
        {"run_id": "r1", "signal": "inst_executed", "observed": 76.0, "attributed": 76.0,
         "ok": True},
        {"run_id": "r1", "signal": "warp_stall_samples", "observed": 6.0, "attributed": 6.0,
         "ok": True}]


def test_changed_spans_make_the_version_stale(seeded: Store) -> None:
    # Move lines 16-17 from reduce into store, as a re-parse of the regions could: line 16
    # (pc 96) follows, and standard.py:263 is no longer shared (both call sites are in store).
    seeded.sql("UPDATE region_span SET end_line = 15 WHERE region_id = ?", [f"{R}/reduce"])
    seeded.sql("UPDATE region_span SET start_line = 16 WHERE region_id = ?", [f"{R}/store"])
    assert materialize.stale(seeded)[0] == ["v1"]
    materialize.ensure_fresh(seeded)
    got = breakdown(seeded, "r1")
    assert (got[f"{R}/store"], got[f"{R}/reduce"]) == (4 + 30, 20)
    assert materialize.stale(seeded) == ([], False)


def test_read_only_store_refuses_to_serve_stale_rows(seeded: Store, tmp_path) -> None:
    seed.run(seeded, "r3", "v1")
    path = seeded.path
    seeded.close()
    ro = open_store(path, read_only=True)
    try:
        with pytest.raises(Exception, match="stale"):
            materialize.ensure_fresh(ro)
    finally:
        ro.close()


def test_runs_added_later_are_built_incrementally_and_match_a_full_build(seeded: Store) -> None:
    seed.run(seeded, "r2", "v1")
    seed.evidence(seeded, "r2", [
        _at(16, "standard.py", 191, 60),
        _at(32, "standard.py", 263, 9)])
    current = materialize._attribution_state(seeded)
    assert materialize._plan(seeded, current) == {"v1": ["r2"]}  # not the whole version
    materialize.ensure_fresh(seeded)
    q = "SELECT * EXCLUDE (program_version) FROM {} ORDER BY ALL"
    incremental = [seeded.rows(q.format(t)) for t in ("attribution_split", "region_attribution")]
    seeded.sql("DELETE FROM materialization")
    assert materialize.ensure_fresh(seeded).rebuilt_versions == ["v1"]
    full = [seeded.rows(q.format(t)) for t in ("attribution_split", "region_attribution")]
    assert incremental == full
    # r1's shared line now follows r2's counts (reduce 60, store 0), r2's follows r1's
    assert breakdown(seeded, "r1")[f"{R}/reduce"] == 24 + 30


def test_a_new_version_is_attributed_by_its_own_spans_alone(seeded: Store) -> None:
    src = ProgramSource.from_path(KERNELS / "softmax.py")
    lines = src.text.splitlines()
    # v2: two comment lines above the kernel move every region down by two lines
    moved = ProgramSource(src.name, "\n".join([*lines[:6], "# v2", "# v2", *lines[6:]]) + "\n")
    seed.version(seeded, "v2", moved)
    seed.run(seeded, "r9", "v2")
    seed.evidence(seeded, "r9", [
        _at(0, "softmax.py", 17, 8)])   # line 15 of v1, in reduce
    before = seeded.rows("SELECT * FROM region_attribution ORDER BY ALL")
    assert materialize._plan(seeded, materialize._attribution_state(seeded)) == {"v2": None}
    materialize.ensure_fresh(seeded)
    assert breakdown(seeded, "r9") == {f"{R}/reduce": 8.0}
    after = seeded.rows("SELECT * FROM region_attribution WHERE program_version = 'v1' "
                        "ORDER BY ALL")
    assert after == before
