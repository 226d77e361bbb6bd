"""Program and device identity at ingest, on recorded real artefacts.

Without --program a version is what the artefact says it measured (kernel names, application,
device model); with one --program the artefacts of one command share the target any of them
states, or the command is refused and writes nothing; a trace's kernels that are not the
program's are a timeline run of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_path, ingest_paths
from argusdb.store import open_store
from argusdb.store.embedded import Store
from tests.conftest import DATA, ROOT

KINETO = DATA / "kineto" / "benchmark_result_924719_1679055439_trace.json.gz"
NSYS = DATA / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"
LN = DATA / "attribution"
LN_PROGRAM = LN / "kernels" / "layernorm.py"
PROBE = DATA / "proton" / "proton_probe.py"


def _json(v: object) -> dict:
    return json.loads(v) if isinstance(v, str) else dict(v)  # type: ignore[arg-type]


def test_unbound_artefacts_of_different_programs_and_gpus_never_share_a_version(
        store: Store) -> None:
    """A Kineto trace of one application (A100-PG509-200) and an nsys export of another
    (A100-SXM4-80GB), both sm_80, ingested in one command without --program."""
    kin, nsys = ingest_paths(store, [KINETO, NSYS])
    assert kin.program_version != nsys.program_version
    rows = {r["program_version"]: r for r in store.rows(
        "SELECT program_version, target, identity FROM program_version")}
    assert {r["target"] for r in rows.values()} == {"sm_80"}  # the target alone would merge
    ik, ins = _json(rows[kin.program_version]["identity"]), _json(
        rows[nsys.program_version]["identity"])
    assert (ik["device"], ins["device"]) == ("NVIDIA A100-PG509-200", "NVIDIA A100-SXM4-80GB")
    assert ins["application"] == "cuda-cloverleaf"
    assert ik["kernels_sha256"] != ins["kernels_sha256"]
    # Each version holds its own trace's kernels only.
    per_version = {r["program_version"]: r["n"] for r in store.rows(
        "SELECT program_version, count(DISTINCT kernel) AS n FROM observed_evidence GROUP BY 1")}
    assert per_version == {kin.program_version: ik["n_kernels"],
                           nsys.program_version: ins["n_kernels"]}
    devices = {r["program_version"]: r["device"] for r in store.rows(
        "SELECT program_version, device FROM run")}
    assert devices == {kin.program_version: "NVIDIA A100-PG509-200",
                       nsys.program_version: "NVIDIA A100-SXM4-80GB"}


def test_repeats_of_one_unbound_program_share_a_version(store: Store) -> None:
    gpu = DATA / "gpu"
    a, b = ingest_paths(store, [gpu / "matmul.bk64_s3.run1.cupti.jsonl",
                                gpu / "matmul.bk64_s3.run2.cupti.jsonl"])
    assert a.program_version == b.program_version and a.run_id != b.run_id
    other = ingest_path(store, gpu / "softmax.default.run1.cupti.jsonl")
    assert other.program_version != a.program_version  # other kernels: another program
    # Same kernel name, other compiles: the launch shape (threads, registers, shared memory)
    # tells them apart (bk32_s1: 106 registers, 32 KB; the forced-wait variant: 150, 96 KB).
    for name in ("matmul.bk32_s1.run1.cupti.jsonl", "matmul.bk64_s3.fw_mainloop.cupti.jsonl"):
        assert ingest_path(store, gpu / name).program_version != a.program_version
    (meta,) = store.rows(f"SELECT meta FROM run WHERE run_id = '{a.run_id}'")
    assert _json(meta["meta"])["launch_shape"] == [["matmul_kernel", 256, 105, 98304]]
    # The raw page of the same compile states the same shape (its Kbyte unit converted).
    raw = ingest_path(store, gpu / "matmul.bk64_s3.raw.csv")
    (meta,) = store.rows(f"SELECT meta FROM run WHERE run_id = '{raw.run_id}'")
    assert _json(meta["meta"])["launch_shape"] == [["matmul_kernel", 256, 105, 98304]]


@pytest.mark.parametrize(("path", "expected"), [
    (DATA / "gpu" / "softmax.default.raw.csv",
     {"name": "NVIDIA H200", "model": "NVIDIA H200", "target": "sm_90", "sm_count": 132}),
    (NSYS, {"name": "NVIDIA A100-SXM4-80GB", "target": "sm_80", "sm_count": 108}),
    (KINETO, {"name": "NVIDIA A100-PG509-200", "target": "sm_80", "sm_count": 108}),
    (DATA / "proton" / "tree.hatchet", {"model": "sm_90 with 132 SMs", "target": "sm_90",
                                        "sm_count": 132}),
    (DATA / "gpu" / "softmax.default.run1.cupti.jsonl", {"device_ids": [0]}),
])
def test_run_device_info_from_every_format_that_states_it(store: Store, path: Path,
                                                          expected: dict) -> None:
    ingest_path(store, path)
    (run,) = store.rows("SELECT device, device_info FROM run")
    info = _json(run["device_info"])
    assert {k: info.get(k) for k in expected} == expected
    assert run["device"] == expected.get("name")


def _unattributed(store: Store) -> float:
    (row,) = store.rows(
        "SELECT sum(value) FILTER (WHERE region_id LIKE '%/_unattributed') / sum(value) AS s "
        "FROM evidence WHERE evidence_class = 'attributed' AND signal = 'inst_executed'")
    return float(row["s"] or 0.0)


def test_artefacts_of_one_compile_share_the_target_any_of_them_states(tmp_path: Path) -> None:
    """The source CSV states no target, the SASS and TTGIR state sm_90: one version, and the
    call sites meet the counters (nothing unattributed)."""
    prog = ProgramSource.from_path(LN_PROGRAM)
    with open_store(tmp_path / "one.duckdb", create=True) as st:
        rs = ingest_paths(st, [LN / "layernorm.source.csv", LN / "layernorm.sass",
                               LN / "layernorm.ttgir"], prog)
        assert len({r.program_version for r in rs}) == 1
        assert st.rows("SELECT target FROM program_version") == [{"target": "sm_90"}]
        assert _unattributed(st) == 0.0
    # Without the TTGIR's call sites, library code has no region (what a split looked like).
    with open_store(tmp_path / "csv.duckdb", create=True) as st:
        ingest_paths(st, [LN / "layernorm.source.csv"], prog)
        assert _unattributed(st) == pytest.approx(4259840 / 9961472)


def test_conflicting_targets_are_refused_naming_them_and_nothing_is_written(
        tmp_path: Path) -> None:
    db = str(tmp_path / "c.duckdb")
    r = CliRunner().invoke(main, ["ingest", db, str(LN / "layernorm.source.csv"),
                                  str(LN / "layernorm.sass"),
                                  str(DATA / "kineto" / "triton_example.json.gz"),
                                  "--program", str(LN_PROGRAM), "--json"])
    assert r.exit_code == 2
    (err,) = json.loads(r.stdout)["errors"]
    assert "sm_80: triton_example.json.gz" in err["message"]
    assert "sm_90: layernorm.sass" in err["message"] and "nothing was written" in err["fix"]
    assert not Path(db).exists()  # checked before the store is opened
    r = CliRunner().invoke(main, ["ingest", db, str(LN / "layernorm.sass"), "--program",
                                  str(LN_PROGRAM), "--option", "target=sm_80"])
    assert r.exit_code == 2 and "compiled for sm_90" in r.output


def test_a_corrupt_artefact_in_the_command_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "cut.cupti.jsonl"
    text = (DATA / "gpu" / "softmax.default.run1.cupti.jsonl").read_text()
    bad.write_text(text[: len(text) // 2])  # cut inside a record
    db = str(tmp_path / "c.duckdb")
    r = CliRunner().invoke(main, ["ingest", db, str(LN / "layernorm.source.csv"), str(bad),
                                  "--program", str(LN_PROGRAM)])
    assert r.exit_code == 2 and "cut.cupti.jsonl" in r.output
    # Every artefact is checked before the store is opened: it is not even created.
    assert not Path(db).exists()


def test_a_traces_other_kernels_are_a_timeline_run_not_the_programs(store: Store) -> None:
    """torch.profiler trace of the probe program: kernel k plus cuBLAS and torch RNG kernels."""
    trace = DATA / "proton" / "torch_trace.json"
    r = ingest_path(store, trace, ProgramSource.from_path(PROBE))
    assert r.other is not None
    mine = store.rows(f"SELECT DISTINCT kernel FROM evidence WHERE program_version = "
                      f"'{r.program_version}'")
    assert mine == [{"kernel": "k"}]
    others = {x["kernel"] for x in store.rows(
        f"SELECT DISTINCT kernel FROM evidence WHERE program_version = "
        f"'{r.other['program_version']}'")}
    assert others == set(r.other["kernels"]) and "k" not in others and len(others) == 3
    # "Median duration of the program" without a kernel filter is the program's kernel's.
    (med,) = store.rows(f"SELECT median(value) AS m FROM evidence WHERE program_version = "
                        f"'{r.program_version}' AND signal = 'duration'")
    (k,) = store.rows("SELECT median(value) AS m FROM evidence WHERE kernel = 'k' "
                      "AND signal = 'duration'")
    assert med == k
    timeline = store.rows(f"SELECT json_extract_string(meta, '$.timeline_of.run_id') AS of "
                          f"FROM run WHERE run_id = '{r.other['run_id']}'")
    assert timeline == [{"of": r.run_id}]
    # The same trace bound to another program version reuses the timeline run.
    again = ingest_path(store, trace, ProgramSource("proton_probe.py",
                                                    PROBE.read_text() + "\n# v2\n"))
    assert again.other is not None and again.other["already_ingested"]
    assert again.other["run_id"] == r.other["run_id"]
    (n,) = store.rows(f"SELECT count(*) AS n FROM kernel_launch WHERE run_id = "
                      f"'{r.other['run_id']}'")
    assert n["n"] == 4


def test_the_instruction_fingerprint_tells_compiles_apart_and_agrees_across_tools(
        store: Store, tmp_path: Path) -> None:
    gpu = DATA / "gpu"
    # Two listings of one kernel name and target, different compiles (the forced-wait variant).
    a = ingest_path(store, gpu / "softmax.default.sass")
    b = ingest_path(store, gpu / "softmax.default.fw_load.sass")
    assert a.program_version != b.program_version
    # The ncu source page and the nvdisasm listing of one compile: one fingerprint.
    codes = {r["artefact_name"]: _json(r["meta"])["code_sha256"] for r in store.rows(
        "SELECT artefact_name, meta FROM run")}
    assert codes["softmax.default.sass"] != codes["softmax.default.fw_load.sass"]
    c = ingest_path(store, gpu / "softmax.default.source.csv")
    (meta,) = store.rows(f"SELECT meta FROM run WHERE run_id = '{c.run_id}'")
    assert _json(meta["meta"])["code_sha256"] == codes["softmax.default.sass"]
    # One --program command with a parent's counters and a variant's listing is refused.
    db = str(tmp_path / "v.duckdb")
    r = CliRunner().invoke(main, ["ingest", db, str(gpu / "softmax.default.source.csv"),
                                  str(gpu / "softmax.default.fw_load.sass"), "--program",
                                  str(ROOT / "argusdb" / "demo" / "kernels" / "softmax.py")])
    assert r.exit_code == 2 and "different machine code for softmax_fwd" in r.output
    assert "softmax.default.fw_load.sass" in r.output
    assert not Path(db).exists()  # checked before the store is opened


def test_without_program_the_listing_and_source_page_of_one_compile_meet(store: Store) -> None:
    gpu = DATA / "gpu"
    csv, sass = ingest_paths(store, [gpu / "softmax.default.source.csv",
                                     gpu / "softmax.default.sass"])
    assert csv.program_version == sass.program_version
    assert store.rows("SELECT target FROM program_version") == [{"target": "sm_90"}]
