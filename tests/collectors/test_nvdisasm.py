"""nvdisasm -g -gi -c listings of the H200 cubins (argusdb/demo/h200/*/*.sass)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from argusdb.collectors import detect
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.ingest import ingest_path
from argusdb.store.embedded import Store
from tests.conftest import DEMO, KERNELS

SASS = DEMO / "matmul" / "matmul.sass"


def instructions(path: Path) -> pa.Table:
    art = detect(path).read(path)
    batches = list(art.batches())
    assert {t for t, _ in batches} == {"instruction"}  # a listing has no measurements
    return pa.Table.from_batches([b for _, b in batches])


def test_schema_target_and_kernel() -> None:
    art = detect(SASS).read(SASS)
    assert art.kind == "nvdisasm.sass" and art.target == "sm_90"
    assert art.kernels == ["matmul_kernel"] and art.meta["instructions"] == 432
    t = instructions(SASS)
    assert t.schema == pa.schema([
        ("kernel", pa.string()), ("pc", pa.int64()), ("sass", pa.string()),
        ("source_file", pa.string()), ("source_line", pa.int32())])


def test_pcs_text_and_lines() -> None:
    rows = {r["pc"]: r for r in instructions(SASS).to_pylist()}
    assert sorted(rows) == list(range(0, 432 * 16, 16))
    assert rows[0x10] == {"kernel": "matmul_kernel", "pc": 0x10,
                          "sass": "LDC R0, c[0x0][0x22c]", "source_file": "standard.py",
                          "source_line": 43}
    soft = {r["pc"]: r for r in instructions(DEMO / "softmax" / "softmax.sass").to_pylist()}
    assert soft[0xD0]["sass"] == "ISETP.GE.AND P2, PT, R3.reuse, R6, PT"
    assert soft[0x1D0]["source_file"] == "standard.py" and soft[0x1D0]["source_line"] == 170
    assert soft[0xAE0]["sass"] == "BRA `(.L_x_0)"
    lines = {r["source_line"] for r in soft.values() if r["source_file"] == "softmax.py"}
    # Line 17 (tl.sum) has no instruction of its own: all of it is standard.py code.
    assert lines == {8, 9, 10, 11, 13, 15, 16, 19}


def test_ingest_checks_the_program_lines(store: Store) -> None:
    prog = ProgramSource.from_path(KERNELS / "matmul.py")
    r = ingest_path(store, SASS, prog)
    assert r.rows == {"instruction": 432}
    ver = store.rows("SELECT target FROM program_version")
    assert ver == [{"target": "sm_90"}]
    short = ProgramSource(prog.name, "\n".join(prog.lines[:10]))
    with pytest.raises(InputError, match=r"matmul\.py line 1[1-9].*has 10 lines"):
        ingest_path(store, SASS, short)
    with pytest.raises(InputError):
        ingest_path(store, SASS, ProgramSource.from_path(KERNELS / "softmax.py"))


def test_listing_without_header_or_instructions(tmp_path: Path) -> None:
    text = SASS.read_text()
    bad = tmp_path / "noinsn.sass"
    bad.write_text("".join(ln for ln in text.splitlines(keepends=True) if "/*" not in ln))
    with pytest.raises(InputError, match=r"noinsn\.sass: holds no instructions"):
        detect(bad).read(bad)
    body = tmp_path / "body.sass"
    body.write_text("".join(text.splitlines(keepends=True)[1:]))
    with pytest.raises(InputError, match="unknown artefact format"):
        detect(body)
