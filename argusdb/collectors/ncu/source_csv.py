"""Nsight Compute source page CSV: per-SASS-instruction metrics (``*.source.csv``).

Exported with ``ncu -i R.ncu-rep --page source --csv --print-source cuda,sass``. The file is a
sequence of sections, one per source file of a kernel::

    "File Path","/opt/.../triton/language/standard.py"
    "Function Name","softmax_fwd"
    "Line No","Source","Address","Source","Warp Stall Sampling (All Samples)",...
    "170","return core.maximum(a, b)","-","-","2478",...        <- a source line (aggregate)
    "","","0x7fc1c97a29d0","      FMNMX R13, R9, R8, !PT","2023",...   <- one SASS instruction
    "","","...","...","-",...                                  <- a gap in the address range

Only the SASS rows become evidence; a source-line row is the sum of the SASS rows under it, so
keeping both would count every value twice. Each SASS row gets the file name (no directory) of
its section and the line of the preceding source-line row. Addresses are absolute virtual
addresses of the profiled process; they are stored as byte offsets from the kernel's lowest
address, which is what ``nvdisasm`` prints as ``/*0000*/`` (checked on the recorded H200 data).

Lineage: a value's ``src_row`` is ``line * 4096 + column`` (0-based line of the file and column
of the header; the stride is ``run.meta.src_row_stride``).

What the source page cannot state: the number of replay passes, the section set, clock and
cache control, the tool version and the device. Those come from the raw page of the same report
(``--page raw --csv``, see :mod:`collectors.ncu.raw_csv`), which is a separate artefact and a
separate run here; values are never copied between the two.

Example:
    >>> art = SourceCsvReader().read(Path("softmax.source.csv"))
    >>> art.kernels, art.interference.signature()
    (['softmax_fwd'], 'replay(? passes, ?)+pc_sampling')
"""

from __future__ import annotations

import csv
import io
import os
import re
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from argusdb.collectors.base import (
    Artefact,
    Interference,
    SourceRef,
    code_fingerprint,
    evidence_batch,
    open_text,
)
from argusdb.collectors.ncu._values import numeric
from argusdb.errors import InputError
from argusdb.schema.arrowvalues import numbers

ADAPTER_VERSION = "ncu.source_csv/1"
#: SASS rows per batch: about 60 values each, so ~250k evidence rows per batch.
BATCH_INSTRUCTIONS = 4096
#: Metric cells the artefacts ``read`` returned keep parsed for their ingest, all together
#: (8 bytes each: 64 MiB); past it a file's cells are parsed again as its batches stream.
CHECKED_CELLS = 8 << 20



#: Bytes of one instruction on the GPUs Nsight Compute profiles (Volta and later), and of the
#: block a kernel's code is padded to (with NOPs, after its final self-branch).
_INSTRUCTION_BYTES, _CODE_ALIGN = 16, 128


def _check_complete(path: Path, code: list[tuple[str, int, str]]) -> None:
    """Refuse a page that lists only part of a kernel's code: a page cut at a line boundary
    (75 of 184 instructions) parsed cleanly, and every total from it came out low.

    The page lists every instruction of the kernel, grouped by source file; together they
    cover the code without a gap, and the code ends in the NOP padding (or the final
    ``BRA`` to itself) that fills its last 128-byte block.
    """
    by_kernel: dict[str, dict[int, str]] = {}
    for kernel, addr, sass in code:
        by_kernel.setdefault(kernel, {})[addr] = sass
    for kernel, ins in sorted(by_kernel.items()):
        lo, hi, n = min(ins), max(ins), len(ins)
        last = ins[hi].strip().split(None, 1)[0].rstrip(";") if ins[hi].strip() else ""
        span = hi - lo + _INSTRUCTION_BYTES
        why = None
        if span != n * _INSTRUCTION_BYTES:
            why = (f"its {n} instructions span {span // _INSTRUCTION_BYTES} instruction slots "
                   f"({hex(lo)}-{hex(hi)}): some are missing")
        elif span % _CODE_ALIGN or last not in ("NOP", "BRA"):
            why = (f"its {n} instructions end at {hex(hi)} with {last or 'an empty row'}, not "
                   f"with the padding that ends a kernel's code ({_CODE_ALIGN}-byte blocks, "
                   "NOPs after the final BRA)")
        if why:
            raise InputError(str(path), f"kernel {kernel}: {why}; the page is cut short or "
                             "edited", "export the source page again, whole (ncu -i R --page "
                             "source --csv --print-source cuda,sass)")

class _Checked(dict[tuple[int, int], list[pa.Array]]):
    """The metric columns ``read`` checked, by (first line, lines); they count against
    :data:`CHECKED_CELLS` while the artefact holding them lives."""

    #: Cells held by every live artefact of the process.
    kept = 0

    def __init__(self) -> None:
        super().__init__()
        self.cells = [0]
        weakref.finalize(self, _Checked._release, self.cells)

    def keep(self, key: tuple[int, int], cols: list[pa.Array]) -> bool:
        """Keep ``cols`` if the budget allows; False (nothing kept) once it does not."""
        n = sum(len(c) for c in cols)
        if _Checked.kept + n > CHECKED_CELLS:
            return False
        _Checked.kept += n
        self.cells[0] += n
        self[key] = cols
        return True

    @staticmethod
    def _release(cells: list[int]) -> None:
        _Checked.kept -= cells[0]


#: src_row = line * SRC_ROW_STRIDE + column (the source page has ~70 columns).
SRC_ROW_STRIDE = 4096
#: Ordinals stay below 2**31 (a report's raw-page values are numbered from there).
_MAX_LINES = (1 << 31) // SRC_ROW_STRIDE

#: Columns with a fixed signal name (and unit) in argusdb.
_NAMED = {
    "Warp Stall Sampling (All Samples)": ("warp_stall_samples", "samples"),
    "Warp Stall Sampling (Not-issued Samples)": ("warp_stall_samples_not_issued", "samples"),
    "Instructions Executed": ("inst_executed", "count"),
    "Thread Instructions Executed": ("thread_inst_executed", "count"),
    "Predicated-On Thread Instructions Executed": ("thread_inst_executed_pred_on", "count"),
    "Avg. Threads Executed": ("avg_threads_executed", "threads"),
    "Avg. Predicated-On Threads Executed": ("avg_threads_executed_pred_on", "threads"),
    "Derivative Avg. Predicated-On Threads Executed":
        ("derivative_avg_threads_executed_pred_on", "threads"),
    "Avg. Predicated-On Threads Unexecuted": ("avg_threads_unexecuted_pred_on", "threads"),
}
#: Columns that are not measurements, or repeat another column: ``# Samples`` equals
#: "Warp Stall Sampling (All Samples)" on every row of the recorded reports; address space,
#: operation and access size describe the instruction rather than measure it.
_SKIP = {"Line No", "Source", "Address", "# Samples", "Address Space", "Access Operation",
         "Access Size"}
_REQUIRED = ("Address", "Instructions Executed", "Warp Stall Sampling (All Samples)")
_UNIT_WORDS = (("sectors", "sectors"), ("wavefronts", "wavefronts"), ("requests", "requests"),
               )
_NOT_ISSUED = re.compile(r"^(stall_\w+)\s*\(Not Issued\)$")


def signal_of(column: str) -> tuple[str, str]:
    """argusdb signal name and unit of a source-page column.

    Example:
        >>> signal_of("stall_long_sb (Not Issued)")
        ('stall_long_sb_not_issued', 'samples')
    """
    if column in _NAMED:
        return _NAMED[column]
    m = _NOT_ISSUED.match(column)
    if m:
        return f"{m.group(1)}_not_issued", "samples"
    if column.startswith("stall_"):
        return column, "samples"
    name = re.sub(r"[^0-9a-z]+", "_", column.lower()).strip("_")
    unit = next((u for w, u in _UNIT_WORDS if w in name), "count")
    return name, unit


@dataclass
class _Layout:
    """Where things are in a section's header row."""

    header: list[str]
    line_no: int | None
    address: int
    sass: int
    metrics: list[tuple[int, str, str]]  # (column, signal, unit)

    @classmethod
    def of(cls, path: Path, row_no: int, header: list[str]) -> _Layout:
        missing = [c for c in _REQUIRED if c not in header]
        if missing:
            hint = ("it was exported without SASS; export with --print-source cuda,sass"
                    if "Address" in missing else "export the full source page of a report "
                    "collected with the SourceCounters section (e.g. --set full)")
            raise InputError(str(path), f"the header row at line {row_no + 1} lacks the "
                             f"column(s) {missing}", hint)
        if len(header) > SRC_ROW_STRIDE:
            raise InputError(str(path), f"the header row at line {row_no + 1} has "
                             f"{len(header)} columns, more than this reader numbers "
                             f"({SRC_ROW_STRIDE})", "export the source page with fewer metrics")
        addr = header.index("Address")
        if addr + 1 >= len(header):
            raise InputError(str(path), f"line {row_no + 1}: no SASS column after 'Address'",
                             "export with --print-source cuda,sass")
        metrics = [(i, *signal_of(c)) for i, c in enumerate(header)
                   if i not in (addr, addr + 1) and c not in _SKIP]
        return cls(header, header.index("Line No") if "Line No" in header else None, addr,
                   addr + 1, metrics)


def _split(path: Path, row_no: int, line: str) -> list[str]:
    """Fields of one line. ncu quotes every field but does not escape quotes inside a field
    (``"x = tl.load(..., other=float("-inf"))"``), so a CSV parser would mangle quoted source
    text; splitting on ``","`` keeps it, and :func:`_walk` rejoins a source field that itself
    contained ``","``."""
    s = line.rstrip("\r\n")
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].split('","')
    if not s.strip():
        return []
    try:
        return next(csv.reader([s]))
    except csv.Error as exc:
        raise InputError(str(path), f"line {row_no + 1}: malformed CSV ({exc})",
                         "the file is truncated or corrupt; export it again") from exc


def _walk(path: Path) -> Iterator[tuple[str, Any, Any, Any]]:
    """Classify lines: ('file', name, path, -), ('kernel', name, -, -), ('line', no, text, -),
    ('sass', row_no, (address, sass, layout), line text); validates the structure as it goes.

    SASS rows are only split up to their SASS field here: their metrics are parsed column-wise
    by Arrow in :func:`_flush`, which is what keeps ingest close to the speed of a raw append.
    """
    layout: _Layout | None = None
    layouts: dict[tuple[str, ...], _Layout] = {}
    seen_file = False
    with open_text(path) as fh:
        for row_no, raw in enumerate(fh):
            s = raw.rstrip("\r\n")
            if not s.strip():
                continue
            fast = (layout is not None and s[0] == '"' and s[-1] == '"'
                    and s.count('","') + 1 == len(layout.header)
                    and not s.startswith(('"File Path",', '"Function Name",', '"Line No",')))
            if fast:
                assert layout is not None
                head = s[1:-1].split('","', layout.sass + 1)
                rec = head
            else:
                rec = _split(path, row_no, s)
                tag = rec[0]
                if tag == "File Path" and len(rec) == 2:
                    seen_file, layout = True, None
                    yield "file", os.path.basename(rec[1].replace("\\", "/")), rec[1], None
                    continue
                if tag == "Function Name" and len(rec) == 2:
                    yield "kernel", rec[1], None, None
                    continue
                if not seen_file:
                    raise InputError(str(path), f"line {row_no + 1} comes before any 'File "
                                     "Path' line", "pass a file written by ncu --page source --csv")
                if tag == "Line No" or (layout is None and "Address" in rec):
                    key = tuple(rec)  # every section repeats the header: build its layout once
                    layout = layouts.get(key) or layouts.setdefault(
                        key, _Layout.of(path, row_no, rec))
                    continue
                if layout is None:
                    raise InputError(str(path), f"line {row_no + 1}: a data row before the "
                                     "header row", "pass a complete ncu --page source --csv export")
                if len(rec) > len(layout.header) and layout.line_no is not None:
                    # A quoted source line that itself contains '","': rejoin it.
                    extra, text = len(rec) - len(layout.header), layout.line_no + 1
                    rec[text:text + extra + 1] = ['","'.join(rec[text:text + extra + 1])]
                if len(rec) != len(layout.header):
                    raise InputError(str(path), f"line {row_no + 1} has {len(rec)} fields, the "
                                     f"header has {len(layout.header)}",
                                     "the file is truncated or corrupt; export it again")
            addr = rec[layout.address]
            if addr == "...":
                continue
            if addr in ("-", ""):
                if layout.line_no is not None and rec[layout.line_no].strip():
                    try:
                        line = int(rec[layout.line_no])
                    except ValueError as exc:
                        raise InputError(str(path), f"line {row_no + 1}: 'Line No' is "
                                         f"{rec[layout.line_no]!r}, not a number",
                                         "the file is corrupt; export it again") from exc
                    yield "line", line, rec[layout.line_no + 1], None
                continue
            if row_no >= _MAX_LINES:
                raise InputError(str(path), f"has more than {_MAX_LINES:,} lines",
                                 "export fewer kernels per file (ncu -i R --kernel-name K ...)")
            yield "sass", row_no, (addr, rec[layout.sass], layout), s


def _address(path: Path, row_no: int, text: str) -> int:
    try:
        return int(text, 16)
    except ValueError as exc:
        raise InputError(str(path), f"line {row_no + 1}: address {text!r} is not hexadecimal",
                         "the file is corrupt; export it again") from exc


class SourceCsvReader:
    """``ncu --page source --csv --print-source cuda,sass`` exports."""

    kind = "ncu.source_csv"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.lstrip(b"\xef\xbb\xbf").startswith(b'"File Path",')

    def read(self, path: Path) -> Artefact:
        # First pass: kernels, their lowest address (the PC origin), quoted source lines.
        base: dict[str, int] = {}
        seen: set[tuple[str, int]] = set()
        refs: dict[tuple[str, int], SourceRef] = {}
        files: dict[str, str] = {}
        kernel = fname = None
        n_sass = 0
        code: list[tuple[str, int, str]] = []
        per_kernel: dict[str, int] = {}
        # Every value is checked here, before anything is written; _batches reuses the parsed
        # columns of a small file (up to CHECKED_CELLS), and its SASS rows as this pass found
        # them (it walks a larger file again, and parses its cells again).
        pending: list[tuple[int, str]] = []
        checked = _Checked()
        keeping = True
        walked: list[_Walked] | None = []
        line: int | None = None

        def check() -> None:
            nonlocal keeping
            assert layout is not None
            key = (pending[0][0], len(pending))
            cols = _check_values(path, pending, layout)
            keeping = keeping and checked.keep(key, cols)

        layout: _Layout | None = None
        for kind, a, b, text in _walk(path):
            if kind == "file":
                fname, kernel, line = a, None, None
                files[a] = b
            elif kind == "kernel":
                kernel = a
            elif kind == "line":
                assert fname is not None
                refs.setdefault((fname, a), SourceRef(fname, a, b))
                line = a
            else:
                if kernel is None:
                    raise InputError(str(path), f"line {a + 1}: an instruction before any "
                                     "'Function Name' line", "pass a complete ncu export")
                pc_abs = _address(path, a, b[0])
                if (kernel, pc_abs) in seen:
                    raise InputError(str(path), f"kernel {kernel} lists address {hex(pc_abs)} "
                                     "twice: the export holds more than one profiled launch",
                                     "export one launch per file (ncu -i R --page source "
                                     "--csv --print-source cuda,sass --launch-skip N "
                                     "--launch-count 1)")
                seen.add((kernel, pc_abs))
                base[kernel] = min(base.get(kernel, pc_abs), pc_abs)
                code.append((kernel, pc_abs, b[1]))
                per_kernel[kernel] = per_kernel.get(kernel, 0) + 1
                n_sass += 1
                if layout is not None and (b[2] is not layout
                                           or len(pending) >= BATCH_INSTRUCTIONS):
                    check()
                    walked = walked if keeping else None
                layout = b[2]
                pending.append((a, text))
                if walked is not None:  # (its cells are checked: no need of the line again)
                    walked.append((a, kernel, pc_abs, b[1].strip(), fname, line, "", layout))
        if pending and layout is not None:
            check()
            walked = walked if keeping else None
        if not n_sass:
            raise InputError(str(path), "holds no SASS instruction rows",
                             "export with --print-source cuda,sass from a report collected "
                             "with the SourceCounters section")
        _check_complete(path, code)
        return Artefact(
            path=str(path), collector="ncu", kind=self.kind, tool="Nsight Compute",
            adapter_version=ADAPTER_VERSION, export_schema="page=source,print-source=cuda,sass",
            batches=lambda: self._batches(path, base, checked,
                                          _walked(path) if walked is None else walked),
            interference=Interference(counter_replay=True, pc_sampling=True),
            kernels=sorted(base), source_refs=list(refs.values()),
            meta={"instructions": n_sass, "instructions_per_kernel": per_kernel,
                  "src_row_stride": SRC_ROW_STRIDE,
                  "code_sha256": code_fingerprint([(k, pc - base[k], sass)
                                                   for k, pc, sass in code]),
                  "source_files": sorted(files),
                  "kernel_base_address": {k: hex(v) for k, v in sorted(base.items())},
                  "not_stated": ["replay_passes", "section_set", "clock_control",
                                 "cache_control", "tool_version", "device"],
                  "note": "the source page does not state replay passes, section set, clock "
                          "or cache control; ingest the raw page (--page raw --csv) of the "
                          "same report for them"})

    def _batches(self, path: Path, base: dict[str, int],
                 checked: dict[tuple[int, int], list[pa.Array]], walked: Iterable[_Walked]
                 ) -> Iterator[tuple[str, pa.RecordBatch]]:
        chunk: list[_Row] = []
        layout: _Layout | None = None
        for row_no, kernel, pc_abs, sass, fname, line, text, lay in walked:
            if layout is not None and lay is not layout and chunk:
                yield from _flush(path, chunk, layout, checked)  # columns differ
            layout = lay
            chunk.append((row_no, kernel, pc_abs - base[kernel], sass, fname, line, text))
            if len(chunk) >= BATCH_INSTRUCTIONS:
                yield from _flush(path, chunk, layout, checked)
        if chunk and layout is not None:
            yield from _flush(path, chunk, layout, checked)


#: One SASS row as the first pass finds it: (line number, kernel, absolute address, sass,
#: file, source line, the CSV line ("" where its cells were kept checked), its section's
#: layout).
_Walked = tuple[int, str, int, str, str | None, int | None, str, _Layout]


def _walked(path: Path) -> Iterator[_Walked]:
    """The SASS rows of ``path``, walked again (a file whose rows the first pass did not keep)."""
    kernel = fname = None
    line: int | None = None
    for kind, a, b, text in _walk(path):
        if kind == "file":
            fname, kernel, line = a, None, None
        elif kind == "kernel":
            kernel = a
        elif kind == "line":
            line = a
        else:
            addr, sass, lay = b
            assert kernel is not None
            yield a, kernel, _address(path, a, addr), sass.strip(), fname, line, text, lay


#: One SASS row: (line number, kernel, pc, sass, file, source line, the CSV line).
_Row = tuple[int, str, int, str, str | None, int | None, str]
_NULLS = ["-", "", "n/a", "N/A", "nan", "NaN", "inf", "-inf", "..."]


def _metric_columns(path: Path, texts: tuple[str, ...], rows: tuple[int, ...],
                    layout: _Layout) -> list[pa.Array]:
    """The metric columns of a chunk of SASS lines, parsed by Arrow's CSV reader and checked.

    A cell is a number, or one of ncu's "no value" marks (``-``, empty, ``n/a``, ``nan``).
    A column whose cells are all words describes rather than measures (it is dropped, as the
    ``_SKIP`` columns are); a word in a column of numbers, or in a column argus knows to be a
    count (instructions executed, stall samples), and a negative value are refused: ncu never
    writes them, so the file was edited or corrupted.
    """
    names = [f"c{i}" for i in range(len(layout.header))]
    raws: list[pa.Array | None] = []
    try:
        table = pacsv.read_csv(
            io.BytesIO("\n".join(texts).encode()),
            read_options=pacsv.ReadOptions(column_names=names),
            convert_options=pacsv.ConvertOptions(
                include_columns=[names[i] for i, _, _ in layout.metrics], null_values=_NULLS,
                strings_can_be_null=True, quoted_strings_can_be_null=True))
    except pa.ArrowInvalid:
        # Quoting Arrow does not accept (ncu does not escape quotes): split in Python.
        recs = [_split(path, 0, t) for t in texts]
        raws = [pa.array([None if r[i] in _NULLS else r[i] for r in recs], pa.string())
                for i, _, _ in layout.metrics]
    else:
        for col in table.columns:
            arr = col.combine_chunks()
            raws.append(arr.cast(pa.string()) if pa.types.is_string(arr.type)
                        or pa.types.is_large_string(arr.type) else None)
            if raws[-1] is None:
                raws[-1] = arr  # already numeric (or all null)
    counts = _counts(raws)
    out = []
    for (i, signal, _), raw in zip(layout.metrics, raws, strict=True):
        assert raw is not None
        if id(raw) in counts:
            out.append(counts[id(raw)])
            continue
        if pa.types.is_null(raw.type):
            out.append(pa.nulls(len(raw), pa.float64()))
            continue
        arr = numeric(raw) if pa.types.is_string(raw.type) else raw.cast(pa.float64())
        if pa.types.is_string(raw.type):
            bad = pc.and_(pc.is_valid(raw), pc.is_null(arr))
            n_bad = pc.sum(bad).as_py() or 0
            if n_bad and (n_bad < len(raw) - raw.null_count or _counted(layout.header[i])):
                j = pc.index(bad, True).as_py()
                raise InputError(str(path), f"line {rows[j] + 1}, column "
                                 f"'{layout.header[i]}': {raw[j].as_py()!r} is not a number "
                                 f"({n_bad} such cells in this part of the file)",
                                 "the file was edited or is corrupt; export it again with ncu "
                                 "-i R --page source --csv --print-source cuda,sass")
        huge = pc.is_inf(arr)
        if pc.any(huge).as_py():
            j = pc.index(huge, True).as_py()
            raise InputError(str(path), f"line {rows[j] + 1}, column '{layout.header[i]}': "
                             "a number too large to be a measurement (not finite)",
                             "the file was edited or is corrupt; export it again")
        neg = pc.less(arr, 0.0)
        if pc.any(neg).as_py():
            j = pc.index(neg, True).as_py()
            raise InputError(str(path), f"line {rows[j] + 1}, column '{layout.header[i]}': "
                             f"{arr[j].as_py()} is negative, and {signal} cannot be",
                             "the file was edited or is corrupt; export it again")
        out.append(arr)
    return out


def _counts(raws: list[pa.Array | None]) -> dict[int, pa.Array]:
    """The integer columns of ``raws`` (what ncu writes for counts) that hold no negative
    value, as float64 columns, by ``id`` of the column: checked together, in one NumPy pass,
    rather than by Arrow calls per column (60 per source page). A column with a negative
    value is left to the per-column check, which names its first such cell."""
    ints = [r for r in raws if r is not None and pa.types.is_integer(r.type)]
    if not ints:
        return {}
    # NumPy views of the buffers (an empty cell read as 0, never negative; it stays empty)
    matrix = np.column_stack([numbers(r, fill=0) for r in ints])
    ok = np.atleast_1d(~(matrix < 0).any(axis=0))
    return {id(r): _float64(r, matrix[:, j]) for j, r in enumerate(ints) if ok[j]}


def _float64(raw: pa.Array, column: np.ndarray) -> pa.Array:
    """``raw`` (integers) as float64: NumPy's column wrapped as an Arrow buffer where no cell
    is empty (``pa.array`` of a NumPy array would import pandas, ~0.5 s a process, to ask
    whether it is a pandas object, and so would ``to_numpy``: :mod:`argusdb.schema.arrowvalues`),
    Arrow's cast where cells are empty (nulls stay nulls)."""
    if raw.null_count:
        return pc.cast(raw, pa.float64())
    values = np.ascontiguousarray(column, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


def _check_values(path: Path, pending: list[tuple[int, str]], layout: _Layout
                  ) -> list[pa.Array]:
    """Parse and check the metric cells of pending SASS lines (see :func:`_metric_columns`)."""
    rows, texts = zip(*pending, strict=True)
    pending.clear()
    return _metric_columns(path, texts, rows, layout)


def _counted(column: str) -> bool:
    """True for columns argus knows hold numbers on every instruction row."""
    return column in _NAMED or column.startswith("stall_")


def _flush(path: Path, chunk: list[_Row], layout: _Layout,
           checked: dict[tuple[int, int], list[pa.Array]]
           ) -> Iterator[tuple[str, pa.RecordBatch]]:
    """One instruction batch and one evidence batch (wide → long, vectorised); the metric
    columns are the ones ``read`` checked for these lines (keyed by first line and count)
    where it kept them."""
    done = checked.get((chunk[0][0], len(chunk)))
    rows, kernels, pcs, sass, files, lines, texts = zip(*chunk, strict=True)
    chunk.clear()
    kernel_a = pa.array(kernels, pa.string())
    pc_a = pa.array(pcs, pa.int64())
    file_a = pa.array(files, pa.string())
    line_a = pa.array(lines, pa.int32())
    yield "instruction", pa.RecordBatch.from_arrays(
        [kernel_a, pc_a, pa.array(sass, pa.string()), file_a, line_a],
        names=["kernel", "pc", "sass", "source_file", "source_line"])
    if done is None and not all(texts):
        raise AssertionError(f"{path}: lines {rows[0]}+{len(rows)} were kept without their cells")
    cols = done if done is not None else _metric_columns(path, texts, rows, layout)
    keep = [j for j, c in enumerate(cols) if c.null_count < len(c)]  # drop categorical columns
    if not keep:
        return
    matrix = np.column_stack([cols[j].to_numpy(zero_copy_only=False) for j in keep])  # NULL: NaN
    r, c = np.nonzero(~np.isnan(matrix))  # row-major: per instruction, its signals in order
    signals = pa.array([layout.metrics[j][1] for j in keep], pa.string())
    units = pa.array([layout.metrics[j][2] for j in keep], pa.string())
    colpos = np.array([layout.metrics[j][0] for j in keep], dtype=np.int64)
    take = pa.array(r)
    ci = pa.array(c)
    yield "evidence", evidence_batch({
        "kernel": kernel_a.take(take), "pc": pc_a.take(take), "source_file": file_a.take(take),
        "source_line": line_a.take(take), "signal": signals.take(ci), "unit": units.take(ci),
        "value": pa.array(matrix[r, c], pa.float64()),
        "src_row": pa.array(np.asarray(rows, dtype=np.int64)[r] * SRC_ROW_STRIDE + colpos[c]),
    })
