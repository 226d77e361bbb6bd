"""SASS listings printed by ``nvdisasm -g -gi -c K.cubin`` (``*.sass``).

The listing names the target in its header flags (``EF_CUDA_SM90``) or, seen on the H200 for
binaries that torch.compile's Inductor compiled (it hands Triton torch's own CUDA 13.0 ptxas;
the same kernel assembled by Triton's bundled ptxas has the flags), in a ``.target sm_90``
line; it opens one section per kernel (``.section .text.<kernel>``), and prints a line marker
before the instructions that a source line produced::

    .headerflags @"... EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
    .section .text.softmax_fwd,"ax",@progbits
        //## File "/src/kernels/softmax.py", line 8
            /*0000*/                   LDC R1, c[0x0][0x28] ;

Each instruction becomes an ``instruction`` row: the PC is the ``/*0000*/`` byte offset (the
same origin as Nsight Compute's addresses after :mod:`collectors.ncu.source_csv` subtracts the
kernel's first address), the file is the marker's file name without directory, and the line is
the marker's line: for inlined library code that is the library line (``standard.py``, line 170),
as in Nsight Compute's source page. ``-gi`` adds inlining information only where the cubin's
debug info has it; for Triton cubins it has none (checked with nvdisasm 13.0 on the H200 machine:
the regenerated listing is byte-identical to the shipped one), so the chain from library line to
kernel line comes from TTGIR/PTX (:mod:`collectors.triton`); were an ``inlined at`` clause
printed, the first location (the inlined code) is kept. A listing has no measurements, so no
evidence rows.

Completeness: the listing states where each kernel ends. Its symbol line
``.size softmax_fwd,(.L_x_1 - softmax_fwd)`` names the label after the last instruction, and
instructions follow each other without a gap (``/*0000*/``, ``/*0010*/``, ...: 16 bytes apiece
on sm_70 and later; before sm_70, where scheduling words sit between instructions, PCs need only
increase). A listing cut short (a copy that stopped, a truncated download) lacks that
label or ends inside an instruction line, and is refused rather than stored in part.

Example:
    >>> art = SassListingReader().read(Path("softmax.sass"))
    >>> art.target, art.kernels
    ('sm_90', ['softmax_fwd'])
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import Artefact, SourceRef, code_fingerprint, open_text
from argusdb.collectors.validate import known_target
from argusdb.errors import InputError

ADAPTER_VERSION = "nvdisasm.listing/1"
_BATCH = 50_000
_FLAGS = re.compile(r'^\s*\.headerflags\s+@"([^"]*)"')
_SM = re.compile(r"\bEF_CUDA_SM(\d+)\b|^\.target sm_(\d+)")
_TARGET = re.compile(r"^\s*\.target\s+sm_(\d+)\w*\s*$")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^\s,]+)")
_MARKER = re.compile(r'^\s*//## File "([^"]+)", line (\d+)')
_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")
_OTHER_SECTION = re.compile(r"^\s*\.section\s+(?!\.text\.)")
_SIZE = re.compile(r"^\s*\.size\s+([^\s,]+)\s*,\s*\(\s*(\.L\w+)\s*-\s*([^\s)]+)\s*\)")
_LABEL = re.compile(r"^(\.L\w+):\s*$")
_FIX = "pass the complete output of nvdisasm -g -gi -c K.cubin (the listing is cut short)"


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The listing's lines; one whose last line has no line end is cut short (nvdisasm ends
    every line, the last one too): a listing short by one byte is refused."""
    no, line = 0, "\n"
    with open_text(path) as fh:
        for no, line in enumerate(fh, start=1):
            yield no, line
    if not line.endswith("\n"):
        raise InputError(str(path), f"its last line ({no}) has no line end", _FIX)


class SassListingReader:
    """``nvdisasm -g`` listings: instructions with PCs and source lines."""

    kind = "nvdisasm.sass"

    def sniff(self, path: Path, head: bytes) -> bool:
        text = head.decode("utf-8", "replace")
        if ".headerflags" in text and "EF_CUDA_" in text:
            return True
        # a listing whose header is a .target line (PTX has .target too, never .elftype)
        return ".elftype" in text and any(_TARGET.match(ln) for ln in text.splitlines())

    def read(self, path: Path) -> Artefact:
        flags: str | None = None
        kernels: list[str] = []
        refs: dict[tuple[str, int], SourceRef] = {}
        n = 0
        markers = 0
        code: list[tuple[str, int, str]] = []
        per_kernel: dict[str, int] = {}
        ends: dict[str, str] = {}  # kernel -> the label its .size line says it ends at
        labels: dict[str, set[str]] = {}
        last: dict[str, tuple[int, int]] = {}  # kernel -> (line, pc) of its last instruction
        step: dict[str, int] = {}
        kernel: str | None = None
        for no, text in self._walk(path):
            kind = text[0]
            if kind == "flags" or (kind == "target" and flags is None):
                flags = text[1]
            elif kind == "kernel":
                kernel = text[1]
                kernels.append(kernel)
                labels.setdefault(kernel, set())
            elif kind == "size":
                if kernel is not None and text[1] == kernel:
                    ends[kernel] = text[2]
            elif kind == "label":
                if kernel is not None:
                    labels[kernel].add(text[1])
            elif kind == "marker":
                markers += 1
                refs.setdefault((text[1], text[2]), SourceRef(text[1], text[2]))
            else:
                if kernel is None:
                    raise InputError(str(path), f"line {no}: an instruction outside a "
                                     ".text.<kernel> section", "pass an nvdisasm listing")
                if not text[3]:
                    raise InputError(str(path), f"line {no}: the instruction at "
                                     f"/*{text[1]:04x}*/ has no closing ';'", _FIX)
                sm = _sm(flags)
                _next_pc(path, no, kernel, text[1], last, step,
                         dense=sm is None or int(sm) >= 70)
                per_kernel[kernel] = per_kernel.get(kernel, 0) + 1
                n += 1
                if kernels:
                    code.append((kernels[-1], text[1], text[2]))
        if flags is None:
            raise InputError(str(path), "has no .headerflags (or .target) line",
                             "pass the complete output of nvdisasm -g -gi -c K.cubin")
        if not n:
            raise InputError(str(path), "holds no instructions",
                             "disassemble the kernel's cubin with nvdisasm -g -gi -c K.cubin")
        for k in sorted(set(kernels)):
            end = ends.get(k)
            if end is None:
                raise InputError(str(path), f"kernel {k} has no '.size {k},(.L_x_N - {k})' "
                                 "line, so where its code ends cannot be checked", _FIX)
            if end not in labels[k]:
                got = per_kernel.get(k, 0)
                raise InputError(str(path), f"kernel {k} ends early: its .size line says its "
                                 f"code runs to label {end}, which never comes ({got} "
                                 "instructions read)", _FIX)
        sm = _sm(flags)
        return Artefact(
            path=str(path), collector="nvdisasm", kind=self.kind, tool="nvdisasm",
            adapter_version=ADAPTER_VERSION, export_schema="nvdisasm -g -c",
            batches=lambda: self._batches(path),
            target=known_target(path, sm, "target (EF_CUDA_SM)") if sm else None,
            kernels=sorted(set(kernels)), source_refs=list(refs.values()),
            meta={"header_flags": flags, "instructions": n, "instructions_per_kernel": per_kernel,
                  "line_markers": markers, "code_sha256": code_fingerprint(code),
                  "has_line_info": bool(markers)})

    def _walk(self, path: Path) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """('flags', s) | ('kernel', name) | ('size', symbol, end label) | ('label', name) |
        ('marker', file, line) | ('insn', pc, sass, has ';')."""
        in_text = False
        for no, line in _lines(path):
            if m := _FLAGS.match(line):
                yield no, ("flags", m.group(1))
            elif not in_text and (m := _TARGET.match(line)):
                yield no, ("target", f".target sm_{m.group(1)}")
            elif m := _SECTION.match(line):
                in_text = True
                yield no, ("kernel", m.group(1))
            elif _OTHER_SECTION.match(line):
                in_text = False
            elif m := _MARKER.match(line):
                yield no, ("marker", os.path.basename(m.group(1)), int(m.group(2)))
            elif in_text and (m := _INSN.match(line)):
                yield no, ("insn", int(m.group(1), 16), m.group(2), ";" in line)
            elif in_text and (m := _LABEL.match(line)):
                yield no, ("label", m.group(1))
            elif in_text and (m := _SIZE.match(line)) and m.group(1) == m.group(3):
                yield no, ("size", m.group(1), m.group(2))

    def _batches(self, path: Path) -> Iterator[tuple[str, pa.RecordBatch]]:
        cols: dict[str, list[Any]] = {c: [] for c in ("kernel", "pc", "sass", "source_file",
                                                      "source_line")}
        kernel: str | None = None
        where: tuple[str | None, int | None] = (None, None)
        for no, item in self._walk(path):
            if item[0] == "kernel":
                kernel, where = item[1], (None, None)
            elif item[0] == "marker":
                where = (item[1], item[2])
            elif item[0] == "insn":
                if kernel is None:
                    raise InputError(str(path), f"line {no}: an instruction outside a "
                                     ".text.<kernel> section", "pass an nvdisasm listing")
                cols["kernel"].append(kernel)
                cols["pc"].append(item[1])
                cols["sass"].append(item[2])
                cols["source_file"].append(where[0])
                cols["source_line"].append(where[1])
                if len(cols["pc"]) >= _BATCH:
                    yield "instruction", _batch(cols)
        if cols["pc"]:
            yield "instruction", _batch(cols)


def _sm(flags: str | None) -> str | None:
    """The SM number of the header flags (``EF_CUDA_SM90``) or ``.target sm_90`` line."""
    m = _SM.search(flags or "")
    return (m.group(1) or m.group(2)) if m else None


def _next_pc(path: Path, no: int, kernel: str, pc: int, last: dict[str, tuple[int, int]],
             step: dict[str, int], dense: bool) -> None:
    """Check that instructions of a kernel start at 0 and follow each other without a gap
    (``dense``: sm_70 and later), or at least in increasing order (older listings interleave
    scheduling words)."""
    if not dense:
        if kernel in last and pc <= last[kernel][1]:
            raise InputError(str(path), f"line {no}: instruction /*{pc:04x}*/ of kernel {kernel} "
                             f"comes after /*{last[kernel][1]:04x}*/: instructions are repeated "
                             "or out of order", _FIX)
        last[kernel] = (no, pc)
        return
    if kernel not in last:
        if pc != 0:
            raise InputError(str(path), f"line {no}: kernel {kernel}'s first instruction is at "
                             f"/*{pc:04x}*/, not /*0000*/", _FIX)
    else:
        prev_no, prev = last[kernel]
        gap = pc - prev
        want = step.setdefault(kernel, gap)
        if gap != want or gap <= 0:
            raise InputError(str(path), f"line {no}: instruction /*{pc:04x}*/ of kernel {kernel} "
                             f"does not follow /*{prev:04x}*/ (line {prev_no}) by {want} bytes: "
                             "instructions are missing or repeated", _FIX)
    last[kernel] = (no, pc)


def _batch(cols: dict[str, list[Any]]) -> pa.RecordBatch:
    b = pa.RecordBatch.from_arrays(
        [pa.array(cols["kernel"], pa.string()), pa.array(cols["pc"], pa.int64()),
         pa.array(cols["sass"], pa.string()), pa.array(cols["source_file"], pa.string()),
         pa.array(cols["source_line"], pa.int32())],
        names=["kernel", "pc", "sass", "source_file", "source_line"])
    for v in cols.values():
        v.clear()
    return b
