"""Attribution on real H200 recordings: the demo's softmax and matmul, and a layer norm whose
library reduction is shared by two regions (tests/data/attribution/README.md)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from scipy.stats import entropy

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path
from argusdb.store import materialize
from argusdb.store.embedded import Store
from tests.conftest import DATA, DEMO, KERNELS

LN = DATA / "attribution"


def ingest(store: Store, program: Path, *paths: Path) -> None:
    src = ProgramSource.from_path(program)
    for p in paths:
        ingest_path(store, p, src, {"target": "sm_90"})


def demo_kernel(store: Store, name: str, order: tuple[str, ...] = ("ttgir", "sass",
                                                                    "source.csv")) -> None:
    ingest(store, KERNELS / f"{name}.py", *(DEMO / name / f"{name}.{s}" for s in order))


def test_softmax_library_reductions_land_in_reduce(store: Store) -> None:
    demo_kernel(store, "softmax")
    lib = store.rows("SELECT source_line, list(DISTINCT region_id) AS regions, "
                     "list(DISTINCT caller_lines) AS callers, list(DISTINCT basis) AS basis "
                     "FROM attribution_share WHERE source_file = 'standard.py' "
                     "GROUP BY ALL ORDER BY 1")
    reduce = ["softmax/softmax_fwd/reduce"]
    assert lib == [{"source_line": 170, "regions": reduce, "callers": [[15]],
                    "basis": ["callsite"]},
                   {"source_line": 191, "regions": reduce, "callers": [[15]],
                    "basis": ["callsite"]},
                   {"source_line": 263, "regions": reduce, "callers": [[17]],
                    "basis": ["callsite"]},
                   {"source_line": 293, "regions": reduce, "callers": [[17]],
                    "basis": ["callsite"]}]
    got = {r["region_id"]: r["value"] for r in store.rows(
        "SELECT region_id, value FROM evidence WHERE evidence_class = 'attributed' "
        "AND signal = 'inst_executed'")}
    # Lines 15-16 of softmax.py plus the four standard.py lines, as the source page sums them.
    observed = store.sql("SELECT sum(value) FROM observed_evidence WHERE signal = "
                         "'inst_executed' AND (source_file = 'standard.py' OR "
                         "source_line BETWEEN 14 AND 17)").fetchone()
    assert observed is not None
    assert got == {"softmax/softmax_fwd/_entry": 655360.0, "softmax/softmax_fwd/load": 983040.0,
                   "softmax/softmax_fwd/reduce": observed[0],
                   "softmax/softmax_fwd/store": 2359296.0}
    assert observed[0] == 7405568.0
    ent = store.sql("SELECT max(association_entropy) FROM region_attribution").fetchone()
    assert ent == (0.0,)


@pytest.mark.parametrize("name", ["softmax", "matmul"])
def test_conservation_is_exact_per_run_kernel_signal(store: Store, name: str) -> None:
    demo_kernel(store, name)
    rows = store.rows("SELECT * FROM attribution_conservation")
    assert len(rows) > 40
    assert [r for r in rows if r["difference"] != 0.0 or not r["ok"]] == []
    n = store.sql("SELECT count(*) FROM observed_evidence WHERE pc IS NOT NULL AND unit IN "
                  "('count', 'samples', 'sectors', 'wavefronts', 'requests')").fetchone()
    assert n == (sum(r["n_source_rows"] for r in rows),)


def test_matmul_cdiv_lands_in_entry(store: Store) -> None:
    demo_kernel(store, "matmul")
    got = store.rows("SELECT DISTINCT region_id, caller_lines FROM attribution_share "
                     "WHERE source_file = 'standard.py'")
    assert got == [{"region_id": "matmul/matmul_kernel/_entry", "caller_lines": [8]}]


def test_call_sites_ingested_later_refresh_library_lines(store: Store) -> None:
    demo_kernel(store, "softmax", ("source.csv",))
    lib = "SELECT DISTINCT region_id FROM attribution_share WHERE source_file = 'standard.py'"
    assert store.rows(lib) == [{"region_id": "softmax/softmax_fwd/_unattributed"}]
    demo_kernel(store, "softmax", ("ttgir",))  # the ingest transaction refreshes
    assert store.rows(lib) == [{"region_id": "softmax/softmax_fwd/reduce"}]
    assert materialize.stale(store) == ([], False)


def test_layernorm_shared_sum_split_by_mapping_run(store: Store) -> None:
    prog = LN / "kernels" / "layernorm.py"
    ingest(store, prog, LN / "layernorm.ttgir", LN / "layernorm.sass", LN / "layernorm.source.csv")
    q = ("SELECT region_id, share, association_entropy, basis FROM attribution_share "
         "WHERE source_file = 'standard.py' AND source_line = 263 AND signal = 'inst_executed' "
         "AND run_id = ? GROUP BY ALL ORDER BY 1")
    full = store.sql("SELECT run_id FROM run WHERE artefact_name = 'layernorm.source.csv'"
                     ).fetchone()
    assert full is not None
    # One instruction-count run only: the TTGIR call sites (one op each) split it evenly.
    assert store.rows(q, [full[0]]) == [
        {"region_id": "layernorm/layernorm_fwd/mean", "share": 0.5, "association_entropy": 1.0,
         "basis": "ttgir_n_ops"},
        {"region_id": "layernorm/layernorm_fwd/var", "share": 0.5, "association_entropy": 1.0,
         "basis": "ttgir_n_ops"}]
    ingest(store, prog, LN / "layernorm.counts.source.csv")
    counts = store.sql("SELECT run_id FROM run WHERE artefact_name = "
                       "'layernorm.counts.source.csv'").fetchone()
    assert counts is not None
    # Per-region counts of the unshared instructions in the counts run: mean is line 15, var
    # lines 17-18 (the shared standard.py lines excluded).
    per_line = dict(store.sql("SELECT source_line, sum(value) FROM observed_evidence WHERE "
                              "run_id = ? AND signal = 'inst_executed' AND source_file = "
                              "'layernorm.py' GROUP BY ALL", [counts[0]]).fetchall())
    mean, var = per_line[15], per_line[17] + per_line[18]
    assert (mean, var) == (524288.0, 1245184.0)
    p = [mean / (mean + var), var / (mean + var)]
    got = store.rows(q, [full[0]])
    assert [r["share"] for r in got] == pytest.approx(p)
    assert [r["association_entropy"] for r in got] == pytest.approx([entropy(p, base=2)] * 2)
    assert {r["basis"] for r in got} == {"mapping_run"}
    lineage = store.rows("SELECT DISTINCT mapping_run_id FROM attribution_share "
                         "WHERE run_id = ? AND n_candidates > 1", [full[0]])
    assert lineage == [{"mapping_run_id": counts[0]}]
    # Region sums: value-weighted entropy between 0 (mean/var's own lines) and H(p).
    reg = store.rows("SELECT region_id, association_entropy, n_shared_rows FROM "
                     "region_attribution WHERE run_id = ? AND signal = 'inst_executed' "
                     "ORDER BY 1", [full[0]])
    assert [r["region_id"].rsplit("/", 1)[1] for r in reg] == ["_entry", "load", "mean",
                                                               "store", "var"]
    shared = [r for r in reg if r["n_shared_rows"]]
    assert [r["region_id"] for r in shared] == ["layernorm/layernorm_fwd/mean",
                                                "layernorm/layernorm_fwd/var"]
    assert all(0 < r["association_entropy"] < entropy(p, base=2) for r in shared)
    cons = store.rows("SELECT * FROM attribution_conservation")
    assert cons and all(r["ok"] for r in cons)
    assert max(abs(r["difference"]) for r in cons) < 1e-6


def test_proton_scopes_land_in_their_regions(store: Store) -> None:
    """In-kernel scopes of the Proton-instrumented softmax (tests/data/gpu) map by name."""
    gpu = DATA / "gpu"
    src = ProgramSource("softmax.py",
                        (gpu / "variants" / "softmax.default.proton_scopes.py").read_text())
    ingest_path(store, gpu / "softmax.default.instr.chrome_trace.gz", src)
    got = store.rows("SELECT region_id, count(*) AS n, sum(value) AS cycles, "
                     "max(association_entropy) AS h FROM evidence "
                     "WHERE evidence_class = 'attributed' GROUP BY ALL ORDER BY 1")
    observed = dict(store.sql("SELECT scope_path, sum(value) FROM observed_evidence "
                              "GROUP BY ALL").fetchall())
    # one region row per (CTA, warp) scope instance: 2048 of each scope in this trace
    assert got == [
        {"region_id": "softmax/softmax_fwd/load", "n": 2048,
         "cycles": observed["softmax_fwd/load"], "h": 0.0},
        {"region_id": "softmax/softmax_fwd/reduce", "n": 2048,
         "cycles": observed["softmax_fwd/reduce"], "h": 0.0},
        {"region_id": "softmax/softmax_fwd/store", "n": 2048,
         "cycles": observed["softmax_fwd/store"], "h": 0.0}]
    # the reduce scope's cycles, straight from the trace: dur (µs) × frequency (MHz)
    with gzip.open(gpu / "softmax.default.instr.chrome_trace.gz", "rt") as fh:
        events = json.load(fh)["traceEvents"]
    from_file = sum(e["dur"] * e["args"]["Frequency (MHz)"] for e in events
                    if e.get("ph") == "X" and e["name"] == "reduce")
    assert observed["softmax_fwd/reduce"] == pytest.approx(from_file, rel=1e-9)
    assert store.rows("SELECT DISTINCT basis FROM attribution_share") == [{"basis": "scope"}]
    assert all(r["ok"] for r in store.rows("SELECT ok FROM attribution_conservation"))
