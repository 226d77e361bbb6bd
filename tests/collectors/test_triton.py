"""Triton compiler outputs of the H200 kernels: TTGIR, TTIR and PTX."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from argusdb.collectors import detect
from argusdb.collectors.regions import ProgramSource
from argusdb.collectors.triton.locations import Locations, trailing_loc
from argusdb.errors import InputError
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.conftest import DATA, DEMO, KERNELS

TTGIR = DEMO / "softmax" / "softmax.ttgir"
INLINE_SCHEMA = pa.schema([
    ("kernel", pa.string()), ("callee_file", pa.string()), ("callee_line", pa.int32()),
    ("caller_file", pa.string()), ("caller_line", pa.int32()), ("n_ops", pa.int32())])


def sites(path: Path) -> pa.Table:
    art = detect(path).read(path)
    batches = list(art.batches())
    assert {t for t, _ in batches} <= {"inline_site"}
    return pa.Table.from_batches([b for _, b in batches], schema=INLINE_SCHEMA)


def test_ttgir_target_module_and_inline_sites() -> None:
    art = detect(TTGIR).read(TTGIR)
    assert art.kind == "triton.ttgir" and art.target == "sm_90"
    assert art.kernels == ["softmax_fwd"]
    assert art.meta["module"] == {"ttg.num-ctas": 1, "ttg.num-warps": 4,
                                  "ttg.target": "cuda:90", "ttg.threads-per-warp": 32}
    t = sites(TTGIR)
    assert t.schema == INLINE_SCHEMA
    # tl.max on line 15 inlines standard.py:191 (reduce) whose combine fn is standard.py:170.
    assert t.to_pylist() == [
        {"kernel": "softmax_fwd", "callee_file": "standard.py", "callee_line": 170,
         "caller_file": "softmax.py", "caller_line": 15, "n_ops": 1},
        {"kernel": "softmax_fwd", "callee_file": "standard.py", "callee_line": 191,
         "caller_file": "softmax.py", "caller_line": 15, "n_ops": 2},
        {"kernel": "softmax_fwd", "callee_file": "standard.py", "callee_line": 263,
         "caller_file": "softmax.py", "caller_line": 17, "n_ops": 1},
        {"kernel": "softmax_fwd", "callee_file": "standard.py", "callee_line": 293,
         "caller_file": "softmax.py", "caller_line": 17, "n_ops": 2}]
    refs = {(r.file_name, r.line) for r in art.source_refs if r.file_name == "softmax.py"}
    assert refs == {("softmax.py", n) for n in (8, 9, 10, 11, 13, 15, 16, 17, 19)}


def test_matmul_ttgir_cdiv_site() -> None:
    art = detect(DEMO / "matmul" / "matmul.ttgir").read(DEMO / "matmul" / "matmul.ttgir")
    assert art.meta["module"]["ttg.num-warps"] == 8
    assert sites(DEMO / "matmul" / "matmul.ttgir").to_pylist() == [
        {"kernel": "matmul_kernel", "callee_file": "standard.py", "callee_line": 43,
         "caller_file": "matmul.py", "caller_line": 8, "n_ops": 2}]


def test_ttir_has_the_same_sites_and_no_target() -> None:
    p = DATA / "triton" / "softmax.ttir"
    art = detect(p).read(p)
    assert art.kind == "triton.ttir" and art.target is None
    assert sites(p).to_pylist() == sites(TTGIR).to_pylist()


def test_ptx_target_lines_and_sites() -> None:
    p = DATA / "triton" / "softmax.ptx"
    art = detect(p).read(p)
    assert art.kind == "triton.ptx" and art.target == "sm_90"  # .target sm_90a
    assert art.meta["ptx_version"] == "8.7" and art.kernels == ["softmax_fwd"]
    rows = sites(p).to_pylist()
    assert [(r["callee_line"], r["caller_line"]) for r in rows] == [
        (170, 15), (191, 15), (263, 17), (293, 17)]
    assert all(r["n_ops"] > 0 for r in rows)
    m = DATA / "triton" / "matmul.ptx"
    # '.loc 1 0 0' is DWARF's "no line": not a reference to line 0.
    assert min(r.line for r in detect(m).read(m).source_refs) == 5


def test_location_grammar() -> None:
    locs = Locations({"#a": '"/x/k.py":3:1', "#b": '"n"(#a)', "#u": "unknown"})
    assert locs.frames('callsite("/lib/s.py":9:2 at #b)') == [("s.py", 9), ("k.py", 3)]
    assert locs.frames("callsite(#u at #b)") == [("k.py", 3)]
    assert locs.frames('fused["/y/f.py":1:0, #a]') == [("f.py", 1)]
    assert trailing_loc("  %x = arith.addf %a, %b : f32 loc(#loc41)\n") == "#loc41"
    assert trailing_loc("  ^bb0(%x: f32 loc(#a)):") is None


def test_ingest_with_program(store: Store) -> None:
    prog = ProgramSource.from_path(KERNELS / "softmax.py")
    r = ingest_path(store, TTGIR, prog)
    assert r.rows == {"inline_site": 4}
    assert store.rows("SELECT target FROM program_version") == [{"target": "sm_90"}]
    with pytest.raises(InputError, match="was compiled for sm_90"):
        ingest_path(store, TTGIR, prog, {"target": "sm_80"})
    with pytest.raises(InputError, match=r"softmax\.py line 13.*has 12 lines"):
        ingest_path(store, TTGIR, ProgramSource(prog.name, "\n".join(prog.lines[:12])))


def test_corrupt_ir(tmp_path: Path) -> None:
    text = TTGIR.read_text()
    cut = tmp_path / "cut.ttgir"
    cut.write_text(text.replace("#loc11 = loc(", "#loc99 = loc("))
    with pytest.raises(InputError, match=r"cut\.ttgir: line \d+: cannot resolve location.*"
                                         r"#loc11 is used but not defined"):
        detect(cut).read(cut)
    nofunc = tmp_path / "nofunc.ttgir"
    nofunc.write_text("\n".join(ln for ln in text.splitlines() if "tt.func" not in ln))
    with pytest.raises(InputError, match=r"defines no tt\.func"):
        detect(nofunc).read(nofunc)
    ptx = tmp_path / "cut.ptx"
    ptx.write_text("\n".join(ln for ln in (DATA / "triton" / "softmax.ptx").read_text()
                             .splitlines() if ".file" not in ln))
    with pytest.raises(InputError, match=r"no \.file directive declares"):
        detect(ptx).read(ptx)
