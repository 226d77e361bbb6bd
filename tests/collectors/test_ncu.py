"""Nsight Compute exports recorded on an H200 (argusdb/demo/h200, tests/data/ncu)."""

from __future__ import annotations

import csv
import os
import re
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from argusdb.collectors import detect
from argusdb.collectors.base import EVIDENCE_SCHEMA
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.collectors.batches import tables as artefact_tables
from tests.conftest import DATA, DEMO, KERNELS

SOURCE = DEMO / "softmax" / "softmax.source.csv"
RAW = DEMO / "softmax" / "softmax.raw.csv"
SASS = DEMO / "softmax" / "softmax.sass"


def tables(path: Path) -> dict[str, pa.Table]:
    return artefact_tables(detect(path).read(path))


def signal(ev: pa.Table, name: str) -> pa.Table:
    return ev.filter(pc.equal(ev["signal"], name))


def csv_sass_rows(path: Path) -> list[dict[str, str]]:
    """SASS rows of a source page, read independently of the reader (plain csv module)."""
    rows, header = [], None
    with open(path) as fh:
        for rec in csv.reader(fh):
            if rec and rec[0] == "Line No":
                header = rec
            elif header and len(rec) == len(header) and rec[2].startswith("0x"):
                rows.append(dict(zip(header, rec, strict=True)))
    return rows


def test_source_page_schema_and_dtypes() -> None:
    t = tables(SOURCE)
    assert t["evidence"].schema == EVIDENCE_SCHEMA
    assert t["instruction"].schema == pa.schema([
        ("kernel", pa.string()), ("pc", pa.int64()), ("sass", pa.string()),
        ("source_file", pa.string()), ("source_line", pa.int32())])
    art = detect(SOURCE).read(SOURCE)
    assert art.kind == "ncu.source_csv" and art.kernels == ["softmax_fwd"]
    assert art.interference.counter_replay and not art.interference.timing_clean()
    # The source page does not state the pass count: recorded as unknown, never invented.
    assert art.interference.replay_passes is None and "replay_passes" in art.meta["not_stated"]


def test_source_page_values_match_the_csv_and_the_raw_page() -> None:
    ev = tables(SOURCE)["evidence"]
    rows = csv_sass_rows(SOURCE)
    assert len(rows) == 184
    total = sum(int(r["Instructions Executed"]) for r in rows)
    assert pc.sum(signal(ev, "inst_executed")["value"]).as_py() == total == 11_403_264
    # The per-instruction sums equal the kernel totals of the raw page of the same report.
    raw = tables(RAW)["evidence"]
    assert signal(raw, "inst_executed")["value"].to_pylist() == [11_403_264]
    assert pc.sum(signal(ev, "warp_stall_samples")["value"]).as_py() == 3712
    assert signal(raw, "smsp__pcsamp_sample_count")["value"].to_pylist() == [3712]
    assert pc.sum(signal(ev, "stall_long_sb")["value"]).as_py() == 2285
    assert pc.sum(signal(ev, "thread_inst_executed")["value"]).as_py() == 364_904_448
    stalls = {s for s in ev["signal"].to_pylist() if s.startswith("stall_")}
    assert len([s for s in stalls if not s.endswith("_not_issued")]) == 18
    assert len([s for s in stalls if s.endswith("_not_issued")]) == 18
    assert {"stall_long_sb_not_issued", "stall_sleeping_not_issued"} <= stalls
    assert set(signal(ev, "warp_stall_samples")["unit"].to_pylist()) == {"samples"}
    assert set(signal(ev, "inst_executed")["unit"].to_pylist()) == {"count"}


def test_source_page_pcs_file_and_line() -> None:
    t = tables(SOURCE)
    ins = {r["pc"]: r for r in t["instruction"].to_pylist()}
    assert min(ins) == 0 and len(ins) == 184
    # 0x7fc1c97a29d0 - 0x7fc1c97a2800: a max of the inlined tl.max, in standard.py line 170.
    assert ins[0x1D0] == {"kernel": "softmax_fwd", "pc": 0x1D0, "sass": "FMNMX R13, R9, R8, !PT",
                          "source_file": "standard.py", "source_line": 170}
    assert ins[0]["sass"] == "LDC R1, c[0x0][0x28]" and ins[0]["source_line"] == 8
    ev = t["evidence"]
    at = ev.filter(pc.and_(pc.equal(ev["pc"], 0x1D0), pc.equal(ev["signal"], "inst_executed")))
    assert at.to_pylist()[0] | {"src_row": 0} == {
        "kernel": "softmax_fwd", "rank": "all", "launch": "all", "cta": "all", "sm": "all",
        "warp": "all",
        "warp_role": "all", "loop_iter": "all", "pc": 0x1D0, "source_file": "standard.py",
        "source_line": 170, "signal": "inst_executed", "value": 65536.0, "unit": "count",
        "replay_pass": None, "scope_path": None, "src_row": 0}
    assert len(set(ev["src_row"].to_pylist())) == ev.num_rows  # unique lineage per value


def _norm(sass: str) -> str:
    return re.sub(r"\s+", " ", sass.replace(".reuse", "")).strip()


@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_source_page_offsets_match_nvdisasm(kernel: str) -> None:
    """PCs normalised to offsets address the same instructions nvdisasm prints at /*offset*/."""
    ncu = {r["pc"]: r for r in tables(DEMO / kernel / f"{kernel}.source.csv")["instruction"]
           .to_pylist()}
    nvd = {r["pc"]: r for r in tables(DEMO / kernel / f"{kernel}.sass")["instruction"]
           .to_pylist()}
    assert ncu.keys() == nvd.keys()
    assert all(ncu[p]["sass"].split()[0] == nvd[p]["sass"].split()[0] for p in ncu)
    same = sum(_norm(ncu[p]["sass"]) == _norm(nvd[p]["sass"]) for p in ncu)
    # Differences: branch targets (ncu prints absolute addresses, nvdisasm labels) and LDGSTS
    # operand order; everything else is the same text.
    assert same >= 0.93 * len(ncu)
    assert all((ncu[p]["source_file"], ncu[p]["source_line"]) ==
               (nvd[p]["source_file"], nvd[p]["source_line"]) for p in ncu)


def test_raw_page_metrics_units_device_and_passes() -> None:
    art = detect(RAW).read(RAW)
    assert art.kind == "ncu.raw_csv" and art.target == "sm_90"
    assert art.device["name"] == "NVIDIA H200" and art.device["multiprocessor_count"] == 132
    assert art.interference.replay_passes == 38 and art.interference.counter_replay
    assert art.interference.section_set is None and art.interference.clock_control is None
    assert {"section_set", "clock_control"} <= set(art.meta["not_stated"])
    ev = tables(RAW)["evidence"]
    assert ev.schema == EVIDENCE_SCHEMA
    dur = signal(ev, "gpu__time_duration.sum").to_pylist()[0]
    assert (dur["value"], dur["unit"]) == (31.072, "us")
    ns = signal(ev, "duration").to_pylist()[0]
    assert ns["value"] == pytest.approx(31_072.0) and ns["unit"] == "ns"
    assert ns["launch"] == "0" and ns["pc"] is None
    grid = signal(ev, "launch__grid_size").to_pylist()[0]
    assert grid["value"] == 16_384  # printed as "16,384"
    assert signal(ev, "launch__registers_per_thread")["unit"].to_pylist() == ["register/thread"]
    names = set(ev["signal"].to_pylist())
    assert not any(n.startswith(("device__attribute_", "profiler__")) for n in names)
    assert "derived_tempMetric4" not in names  # 'nan'
    assert "launch__cluster_scheduling_policy" not in names  # a word, not a number


def test_ingest_binds_program_and_refuses_the_wrong_one(store: Store) -> None:
    prog = ProgramSource.from_path(KERNELS / "softmax.py")
    r = ingest_path(store, SOURCE, prog, {"target": "sm_90"})
    assert r.rows == {"instruction": 184, "evidence": 10_856}
    raw = ingest_path(store, RAW, prog)
    assert raw.program_version == r.program_version  # both say (or are told) sm_90
    rows = store.rows("SELECT region_id, count(*) AS n FROM evidence "
                      "WHERE signal = 'duration' GROUP BY ALL")
    assert rows == [{"region_id": "softmax/softmax_fwd", "n": 1}]
    run = store.rows(f"SELECT * FROM run WHERE run_id = '{raw.run_id}'")[0]
    assert run["replay_passes"] == 38 and not run["timing_clean"]
    assert run["device"] == "NVIDIA H200"
    with pytest.raises(InputError, match=r"matmul\.py"):
        ingest_path(store, SOURCE, ProgramSource.from_path(KERNELS / "matmul.py"))
    changed = prog.text.replace('other=float("-inf")', "other=0.0")
    with pytest.raises(InputError, match="line 13"):
        ingest_path(store, SOURCE, ProgramSource(prog.name, changed))
    assert store.sql("SELECT count(*) FROM run").fetchone() == (2,)


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_truncated_source_page(tmp_path: Path) -> None:
    text = SOURCE.read_text()
    bad = _bad(tmp_path, "cut.source.csv", text[: len(text) // 2])
    with pytest.raises(InputError, match=r"cut\.source\.csv: line \d+ has \d+ fields.*export"):
        detect(bad).read(bad)


def test_source_page_missing_column(tmp_path: Path) -> None:
    lines = SOURCE.read_text().splitlines()
    col = lines[2].split('","').index("Instructions Executed")
    cut = ['","'.join(f for i, f in enumerate(ln.split('","')) if i != col)
           if ln.count('","') > 5 else ln for ln in lines]
    bad = _bad(tmp_path, "nocol.source.csv", "\n".join(cut))
    with pytest.raises(InputError, match=r"lacks the column\(s\) \['Instructions Executed'\]"):
        detect(bad).read(bad)


def test_source_page_without_sass(tmp_path: Path) -> None:
    text = SOURCE.read_text().replace('"Address"', '"Addr"')
    bad = _bad(tmp_path, "nosass.source.csv", text)
    with pytest.raises(InputError, match="--print-source cuda,sass"):
        detect(bad).read(bad)


def test_corrupt_address(tmp_path: Path) -> None:
    bad = _bad(tmp_path, "addr.source.csv", SOURCE.read_text().replace("0x7fc1c97a29e0", "0xZZ"))
    with pytest.raises(InputError, match="'0xZZ' is not hexadecimal"):
        detect(bad).read(bad)


def test_two_launches_in_one_export_are_refused(tmp_path: Path) -> None:
    text = SOURCE.read_text()
    bad = _bad(tmp_path, "two.source.csv", text + text)
    with pytest.raises(InputError, match="more than one profiled launch"):
        detect(bad).read(bad)


def test_raw_page_without_results_and_without_units(tmp_path: Path) -> None:
    lines = RAW.read_text().splitlines()
    head = _bad(tmp_path, "head.raw.csv", "\n".join(lines[:2]) + "\n")
    with pytest.raises(InputError, match="holds no profiled kernel"):
        detect(head).read(head)
    nounits = _bad(tmp_path, "nounits.raw.csv", "\n".join([lines[0], lines[2]]) + "\n")
    with pytest.raises(InputError, match="not the units row"):
        detect(nounits).read(nounits)
    cut = _bad(tmp_path, "cut.raw.csv", "\n".join(lines)[: -5000])
    with pytest.raises(InputError, match="fields, the header has 2238"):
        detect(cut).read(cut)


REPORT = DATA / "ncu" / "softmax.ncu-rep"


def test_ncu_rep_without_nsight_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("argusdb.collectors.ncu.report.find_ncu", lambda: None)
    with pytest.raises(InputError) as err:
        detect(REPORT).read(REPORT)
    msg = str(err.value)
    assert "softmax.ncu-rep" in msg and "Nsight Compute (ncu) is not installed" in msg
    assert "--page source --csv --print-source cuda,sass > softmax.source.csv" in msg


def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> Path:
    """An ``ncu`` on PATH that answers ``-i softmax.ncu-rep`` with the pages exported from it on
    the H200 machine (tests/data/H200.md), so the report path runs where ncu is not installed."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "ncu"
    body = ('echo "==ERROR== Cannot open report" >&2; exit 1' if fail else f"""
case "$*" in
  *--version*) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; \\
               echo "Version 2025.3.1.0 (build 36398880) (public-release)";;
  *"--page source"*) cat "{SOURCE}";;
  *"--page raw"*) cat "{RAW}";;
  *) exit 2;;
esac""")
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return script


def test_ncu_rep_through_nsight_compute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        store: Store) -> None:
    fake_ncu(tmp_path, monkeypatch)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    art = detect(REPORT).read(REPORT)
    assert len(list(scratch.glob("argus-ncu-*/report.*.csv"))) == 2  # the exported pages
    assert art.kind == "ncu.report" and art.tool_version == "2025.3.1.0"
    assert art.target == "sm_90" and art.interference.replay_passes == 38
    assert "tool_version" not in art.meta["not_stated"]
    assert sum(b.num_rows for _, b in art.batches()) == 184 + 10_856 + 2026
    assert not list(scratch.iterdir())  # removed once the batches are read
    r = ingest_path(store, REPORT, ProgramSource.from_path(KERNELS / "softmax.py"))
    # One run with both pages: the same values as ingesting the two exports.
    assert r.rows == {"instruction": 184, "evidence": 10_856 + 2026}
    totals = store.rows("SELECT pc IS NULL AS kernel_wide, sum(value) AS v FROM evidence "
                        "WHERE signal = 'inst_executed' AND evidence_class = 'observed' "
                        "GROUP BY ALL ORDER BY ALL")
    assert totals == [{"kernel_wide": False, "v": 11_403_264}, {"kernel_wide": True,
                                                                "v": 11_403_264}]
    run = store.rows("SELECT tool_version, replay_passes, device FROM run")
    assert run == [{"tool_version": "2025.3.1.0", "replay_passes": 38, "device": "NVIDIA H200"}]
    assert not list(scratch.iterdir())


def test_ncu_rep_that_ncu_cannot_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ncu(tmp_path, monkeypatch, fail=True)
    with pytest.raises(InputError, match=r"exited with 1 \(==ERROR== Cannot open report\)"):
        detect(REPORT).read(REPORT)


def test_details_page_is_refused_for_the_raw_page() -> None:
    p = DATA / "ncu" / "softmax.details.csv"
    with pytest.raises(InputError, match=r"details page.*--page raw --csv"):
        detect(p).read(p)


def test_source_page_streams_in_bounded_batches(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import argusdb.collectors.ncu.source_csv as mod

    text = SOURCE.read_text()
    big = tmp_path / "big.source.csv"
    big.write_text("".join(text.replace('"softmax_fwd"', f'"k{i}"') for i in range(6)))
    monkeypatch.setattr(mod, "BATCH_INSTRUCTIONS", 100)
    art = detect(big).read(big)
    sizes = [(t, b.num_rows) for t, b in art.batches()]
    ins = [n for t, n in sizes if t == "instruction"]
    assert sum(ins) == 6 * 184 and max(ins) <= 100 and len(ins) >= 12
    assert sum(n for t, n in sizes if t == "evidence") == 6 * 10_856
    assert art.kernels == [f"k{i}" for i in range(6)]


def test_cli_ingest_of_a_report_exits_2_with_the_export_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from tests.cli.test_cli import run

    monkeypatch.setattr("argusdb.collectors.ncu.report.find_ncu", lambda: None)
    db = str(tmp_path / "s.duckdb")
    code, out, _ = run("ingest", db, str(DATA / "ncu" / "softmax.ncu-rep"), "--json")
    assert code == 2
    err = json.loads(out)["errors"][0]
    assert err["file"].endswith("softmax.ncu-rep") and "not installed" in err["problem"]
    assert err["fix"].startswith("export it with `ncu -i softmax.ncu-rep --page source")
    code, out, _ = run("ingest", db, str(SOURCE), str(RAW), "--program",
                       str(KERNELS / "softmax.py"), "--option", "target=sm_90", "--json")
    assert code == 0
    runs = json.loads(out)["runs"]
    assert [r["rows"] for r in runs] == [{"instruction": 184, "evidence": 10_856},
                                         {"evidence": 2026}]
    assert runs[0]["program_version"] == runs[1]["program_version"]


def test_source_page_batches_reuse_the_checked_cells(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``read`` checks every metric cell and keeps the parsed columns for the batches (within
    a budget); the batches are the same whether they were kept, kept in part or parsed again,
    and a dropped artefact gives its cells back to the budget."""
    import gc

    import argusdb.collectors.ncu.source_csv as mod

    text = SOURCE.read_text()
    big = tmp_path / "big.source.csv"
    big.write_text("".join(text.replace('"softmax_fwd"', f'"k{i}"') for i in range(3)))
    monkeypatch.setattr(mod, "BATCH_INSTRUCTIONS", 100)
    gc.collect()
    before = mod._Checked.kept
    kept = detect(big).read(big)
    n_kept = mod._Checked.kept - before
    assert n_kept > 0
    monkeypatch.setattr(mod, "CHECKED_CELLS", before + n_kept + n_kept // 2)
    half = detect(big).read(big)   # the budget holds about half of its cells
    assert 0 < mod._Checked.kept - before - n_kept < n_kept
    monkeypatch.setattr(mod, "CHECKED_CELLS", 0)
    again = detect(big).read(big)  # none kept: parsed again
    got = [[(t, b) for t, b in a.batches()] for a in (kept, half, again)]
    assert [t for t, _ in got[0]] == [t for t, _ in got[2]]
    for rows in got[:2]:
        assert all(b.equals(c) for (_, b), (_, c) in zip(rows, got[2], strict=True))
    del kept, half, again, got
    gc.collect()
    assert mod._Checked.kept == before


def test_a_small_source_page_is_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page whose cells ``read`` kept gives its batches from the rows that pass found, without
    reading the file again; the same batches as a page walked twice."""
    import argusdb.collectors.ncu.source_csv as mod

    once = detect(SOURCE).read(SOURCE)
    monkeypatch.setattr(mod, "CHECKED_CELLS", 0)
    twice = detect(SOURCE).read(SOURCE)

    def no_walk(path: Path) -> None:
        raise AssertionError(f"{path} walked again")

    walk = mod._walk
    monkeypatch.setattr(mod, "_walk", no_walk)
    got = list(once.batches())
    monkeypatch.setattr(mod, "_walk", walk)
    want = list(twice.batches())
    assert [t for t, _ in got] == [t for t, _ in want] == ["instruction", "evidence"]
    assert all(b.equals(c) for (_, b), (_, c) in zip(got, want, strict=True))


def test_count_columns_checked_together_are_the_columns_arrow_casts() -> None:
    """The source page's integer metric columns are checked in one NumPy pass: each comes
    back as Arrow's own float64 cast of it (NULL cells stay NULL); a column holding a
    negative value is left to the per-column check that names its cell."""
    from argusdb.collectors.ncu.source_csv import _counts

    raws: list[pa.Array | None] = [
        pa.array([3, None, 7], pa.int64()), pa.array([0, 5, 2**40], pa.int64()),
        pa.array([1, -4, 2], pa.int64()), pa.array(["1", "x", None]), None,
        pa.array([0.5, 1.5, None], pa.float64())]
    got = _counts(raws)
    assert set(got) == {id(raws[0]), id(raws[1])}
    for r in raws[:2]:
        assert r is not None and got[id(r)].equals(r.cast(pa.float64()))
    assert _counts([None, pa.array(["a"])]) == {}
