"""Derivation SQL modules on seed rows: a forced-wait variant against its parent."""

from __future__ import annotations

import json

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import UsageError
from argusdb.ingest.variants import VariantOf, bind, record_check
from argusdb.store import materialize
from argusdb.store.embedded import Store
from tests.attribution import seed
from tests.conftest import KERNELS

K = "softmax_fwd"
PARENT = [50000, 32000, 32100, 31900, 32050, 31950, 60000]   # launch 0 cold, 6 perturbed
VARIANT = [70000, 40000, 40100, 39900, 40050, 39950, 40000]


def timing_run(store: Store, run_id: str, version: str, durations: list[int]) -> None:
    seed.run(store, run_id, version, collector="cupti", timing_clean=True,
             signature="activity_tracing")
    rows, launches, t = [], [], 1_000_000
    # one launch of another kernel before the target launches and one after them
    order = [("randn_kernel", 0, 5000)] + [(K, i, d) for i, d in enumerate(durations)] + \
        [("reference_softmax", 0, 9000)]
    for kernel, i, d in order:
        rows.append({"kernel": kernel, "launch": str(i), "signal": "duration", "value": d,
                     "unit": "ns"})
        launches.append({"kernel": kernel, "launch": i, "start_ns": t, "end_ns": t + d,
                         "dur_ns": d})
        t += d + 1000
    seed.evidence(store, run_id, rows)
    seed.rows(store, "kernel_launch", run_id, launches)


@pytest.fixture
def probed(store: Store) -> Store:
    src = ProgramSource.from_path(KERNELS / "softmax.py")
    seed.version(store, "parent", src)
    seed.version(store, "variant", ProgramSource(src.name, src.text + "\n# forced wait\n"))
    bind(store, "variant", VariantOf("parent", "forced_wait:softmax/softmax_fwd/load", "tf-1"))
    timing_run(store, "p1", "parent", PARENT)
    timing_run(store, "v1", "variant", VARIANT)
    # a replayed parent run: never paired with a clean variant run
    seed.run(store, "p-ncu", "parent")
    materialize.ensure_fresh(store)
    return store


def derived(store: Store) -> list[dict]:
    return store.rows("SELECT * FROM evidence WHERE evidence_class = 'derived'")


def test_unchecked_variant_derives_nothing(probed: Store) -> None:
    assert derived(probed) == []
    assert probed.rows("SELECT region_id, kernel, status FROM derivation_probe") == [
        {"region_id": "softmax/softmax_fwd/load", "kernel": K, "status": "unchecked"}]


def test_checked_variant_gives_exposed_latency_with_conditions(probed: Store) -> None:
    assert record_check(probed, "variant", "parent", rel_err=3e-8)
    rows = derived(probed)
    assert len(rows) == 1
    row = rows[0]
    assert (row["program_version"], row["region_id"], row["signal"], row["unit"]) == (
        "parent", "softmax/softmax_fwd/load", "exposed_latency", "ns")
    assert row["value"] == 40000 - 32000
    lineage = json.loads(row["lineage"])
    assert (lineage["run_id"], lineage["parent_run_id"], lineage["task_id"]) == ("v1", "p1",
                                                                                  "tf-1")
    cond = lineage["conditions"]
    assert cond["probe"] == "forced_wait:softmax/softmax_fwd/load"
    assert cond["kept"] == {"variant": [1, 2, 3, 4, 5, 6], "parent": [1, 2, 3, 4, 5]}
    assert cond["check"] == {"rel_err": 3e-8, "tolerance": 1e-5, "passed": True}
    dropped = {(d["side"], d["kernel"], d["launch"]): d["reason"] for d in cond["dropped"]}
    assert dropped == {
        ("parent", K, 0): "warmup", ("parent", K, 6): "outlier",
        ("parent", "randn_kernel", 0): "upstream",
        ("parent", "reference_softmax", 0): "downstream",
        ("variant", K, 0): "warmup", ("variant", "randn_kernel", 0): "upstream",
        ("variant", "reference_softmax", 0): "downstream"}
    assert len(lineage["source_evidence_ids"]) == 11


def test_failed_check_withdraws_the_derived_value(probed: Store) -> None:
    record_check(probed, "variant", "parent", rel_err=3e-8)
    assert len(derived(probed)) == 1
    assert not record_check(probed, "variant", "parent", rel_err=0.2)
    assert derived(probed) == []
    assert probed.rows("SELECT status FROM derivation_probe") == [{"status": "result_differs"}]


def test_new_parent_run_refreshes_the_pairing(probed: Store) -> None:
    record_check(probed, "variant", "parent", rel_err=3e-8)
    timing_run(probed, "p2", "parent", [d + 1000 for d in PARENT])
    assert materialize.stale(probed)[1]
    materialize.ensure_fresh(probed)
    rows = derived(probed)
    assert [(json.loads(r["lineage"])["parent_run_id"], r["value"]) for r in rows] == [
        ("p2", 40000 - 33000)]


def test_binding_checks_parent_and_transform(probed: Store) -> None:
    with pytest.raises(UsageError, match="not in the store"):
        bind(probed, "variant", VariantOf("nope", "forced_wait:load"))
    with pytest.raises(UsageError, match="already a variant"):
        bind(probed, "variant", VariantOf("parent", "pipelining_off"))
    with pytest.raises(UsageError, match="not a variant"):
        record_check(probed, "parent", "variant", rel_err=0.0)


def test_run_of_an_unrelated_version_leaves_derivation_alone(probed: Store) -> None:
    record_check(probed, "variant", "parent", rel_err=3e-8)
    materialize.ensure_fresh(probed)
    before = derived(probed)
    assert before
    seed.version(probed, "other", ProgramSource("other.py", "x = 1\n"))
    timing_run(probed, "o1", "other", PARENT)
    assert not materialize.stale(probed)[1]  # no variant, parent or launch group: not read
    assert not materialize.ensure_fresh(probed).derivation_rebuilt
    assert derived(probed) == before
    # a run of a multi-process launch may be read (clock offsets): derivation is stale
    seed.run(probed, "o2", "other")
    probed.sql("UPDATE run SET launch_group = 'g1', rank = 0 WHERE run_id = 'o2'")
    assert materialize.stale(probed)[1]
