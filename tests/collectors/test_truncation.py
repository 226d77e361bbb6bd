"""Truncation is detected where the format allows it: each of these was accepted before, and
its rows stored with totals silently low."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from argusdb.collectors import detect
from argusdb.errors import InputError
from argusdb.observe.runner.gpu_tools import write_jsonl
from tests.conftest import DATA, DEMO

CUPTI = DEMO / "softmax" / "softmax.cupti.jsonl"
PAGE = DEMO / "softmax" / "softmax.source.csv"
SASS = DEMO / "softmax" / "softmax.sass"
NSYS = DATA / "nsys" / "perlmutter-cloverleaf-cuda.sqlite"


def _read(path: Path) -> object:
    art = detect(path).read(path)
    for _ in art.batches():
        pass
    return art


def _records() -> list[dict[str, object]]:
    return [json.loads(line) for line in CUPTI.read_text().splitlines() if line.strip()]


def test_cupti_written_by_argusdb_reads_whole(tmp_path: Path) -> None:
    f = tmp_path / "timing.cupti.jsonl"
    write_jsonl(f, _records())
    lines = f.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "ARGUS_HEADER"
    assert json.loads(lines[-1]) == {"kind": "ARGUS_TRAILER", "records": len(lines) - 2}
    art = _read(f)
    assert art.kernels == detect(CUPTI).read(CUPTI).kernels   # type: ignore[attr-defined]


@pytest.mark.parametrize("keep", [1, 2, 50, -1])
def test_cupti_cut_at_a_record_boundary_is_refused(tmp_path: Path, keep: int) -> None:
    f = tmp_path / "timing.cupti.jsonl"
    write_jsonl(f, _records())
    lines = f.read_text().splitlines(keepends=True)
    f.write_text("".join(lines[:keep]))   # the header and some records; never the trailer
    with pytest.raises(InputError, match="without the trailer that argusdb writes last"):
        _read(f)


def test_cupti_trailer_that_miscounts_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "timing.cupti.jsonl"
    write_jsonl(f, _records())
    lines = f.read_text().splitlines(keepends=True)
    f.write_text("".join(lines[:1] + lines[2:]))   # a record gone from the middle
    n = len(lines) - 2
    with pytest.raises(InputError, match=f"its trailer counts {n} records, the file holds {n - 1}"):
        _read(f)


def test_cupti_of_other_writers_needs_no_trailer() -> None:
    _read(CUPTI)   # cupti-python output recorded before the trailer: no header either


def test_source_page_cut_at_a_line_boundary_is_refused(tmp_path: Path) -> None:
    lines = PAGE.read_text().splitlines(keepends=True)
    rows = [i for i, ln in enumerate(lines) if ',"0x' in ln]
    assert len(rows) == 184
    for cut in (rows[74] + 1, rows[99] + 1, rows[-2] + 1):   # 75, 100 and 183 instructions
        f = tmp_path / "cut.source.csv"
        f.write_text("".join(lines[:cut]))
        with pytest.raises(InputError, match=r"kernel softmax_fwd: .*the page is cut short"):
            _read(f)
    _read(PAGE)


def test_sass_listing_short_by_one_byte_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "k.sass"
    shutil.copy(SASS, f)
    os.truncate(f, f.stat().st_size - 1)
    with pytest.raises(InputError, match=r"its last line \(\d+\) has no line end"):
        _read(f)


@pytest.mark.parametrize("delta", [-1, -4096, 1, 4096])
def test_nsys_export_short_or_long_by_bytes_is_refused(tmp_path: Path, delta: int) -> None:
    f = tmp_path / "r.sqlite"
    shutil.copy(NSYS, f)
    os.truncate(f, f.stat().st_size + delta)
    with pytest.raises(InputError, match="is truncated or padded"):
        _read(f)
