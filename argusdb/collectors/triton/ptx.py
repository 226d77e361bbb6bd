"""PTX of a compiled Triton kernel (``*.ptx``, ``kernel.asm["ptx"]``).

LLVM's NVPTX back end states the target (``.target sm_90a``), the entry points
(``.visible .entry softmax_fwd(``), the source files (``.file 2 ".../standard.py"``) and a
``.loc FILE LINE COL`` before the instructions of each source line; Triton's LLVM prints the
inlining chain as a comment after it::

    .loc 2 170 27   // standard.py:170:27 @[ standard.py:191:40 @[ softmax.py:15:22 ] ]

The reader yields the target, the kernels and the referenced lines (to check ``--program``), and
an ``inline_site`` row per (kernel, inlined line, outermost kernel line) with the number of PTX
instructions under such a ``.loc`` (the PTX counterpart of the TTGIR sites).

Example:
    >>> art = PtxReader().read(Path("softmax.ptx"))
    >>> art.target, art.kernels
    ('sm_90', ['softmax_fwd'])
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from argusdb.collectors.base import Artefact, SourceRef, open_text
from argusdb.collectors.triton.mlir import TritonMlirReader
from argusdb.collectors.validate import Braces, known_target
from argusdb.errors import InputError

ADAPTER_VERSION = "triton.ptx/1"
_VERSION = re.compile(r"^\s*\.version\s+(\S+)")
_TARGET = re.compile(r"^\s*\.target\s+([^/\n]+?)\s*(?://.*)?$")
_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"(?:\s*,\s*\d+\s*,\s*\d+)?(?:\s+"([^"]+)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$")
_CHAIN = re.compile(r"([^\s@\[\]]+?):(\d+)(?::\d+)?")
_INSN = re.compile(r"^\s*(?:@!?%\w+\s+)?[a-z][\w.]*\b[^:]*;")


class PtxReader:
    """PTX text with ``.loc`` line information."""

    kind = "triton.ptx"

    def sniff(self, path: Path, head: bytes) -> bool:
        text = head.decode("utf-8", "replace")
        return bool(re.search(r"^\s*\.version\s+\d", text, re.M)
                    and re.search(r"^\s*\.target\s+", text, re.M))

    def read(self, path: Path) -> Artefact:
        version = target = None
        kernels: list[str] = []
        files: dict[int, str] = {}
        locs: list[tuple[int, int, int]] = []  # (file no, line, text line)
        sites: Counter[tuple[str, tuple[str, int], tuple[str, int]]] = Counter()
        kernel: str | None = None
        chain: list[tuple[str, int]] = []
        braces = Braces(path, "pass the complete PTX (kernel.asm['ptx'])")
        bodies: set[str] = set()
        with open_text(path) as fh:
            for no, line in enumerate(fh, start=1):
                if braces.line(no, line) > 0 and kernel is not None:
                    bodies.add(kernel)
                if m := _VERSION.match(line):
                    version = m.group(1)
                elif m := _TARGET.match(line):
                    target = m.group(1).split(",")[0].strip()
                elif m := _ENTRY.match(line):
                    kernel = m.group(1)
                    kernels.append(kernel)
                elif m := _FILE.match(line):
                    name = m.group(3) or m.group(2)
                    files[int(m.group(1))] = name.replace("\\", "/").rsplit("/", 1)[-1]
                elif m := _LOC.match(line):
                    locs.append((int(m.group(1)), int(m.group(2)), no))
                    comment = m.group(3).split("//", 1)[1] if "//" in m.group(3) else ""
                    chain = [(f, int(ln)) for f, ln in _CHAIN.findall(comment)]
                elif kernel and len(chain) >= 2 and _INSN.match(line):
                    sites[(kernel, chain[0], chain[-1])] += 1
        if target is None or version is None:
            raise InputError(str(path), "has no .version/.target directive",
                             "pass the complete PTX (kernel.asm['ptx'])")
        if not kernels:
            raise InputError(str(path), "defines no .entry", "pass the PTX of a kernel")
        braces.end("a '{' block")
        if missing := sorted(set(kernels) - bodies):
            raise InputError(str(path), f".entry {missing[0]} has no body: the file is cut short",
                             "pass the complete PTX (kernel.asm['ptx'])")
        refs: set[tuple[str, int]] = set()
        for f, ln, no in locs:
            if f not in files:
                raise InputError(str(path), f"line {no}: .loc names file {f}, which no .file "
                                 "directive declares", "the PTX is truncated; dump it again")
            if ln > 0:  # line 0 is DWARF's "no source line"
                refs.add((files[f], ln))
        for _, callee, caller in sites:
            refs.update({callee, caller})
        return Artefact(
            path=str(path), collector="triton", kind=self.kind, tool="LLVM NVPTX (Triton)",
            adapter_version=ADAPTER_VERSION, export_schema=f"ptx {version}",
            batches=lambda: TritonMlirReader._batches(sites),
            target=known_target(path, target, "target (.target)"), kernels=sorted(set(kernels)),
            source_refs=[SourceRef(f, ln) for f, ln in sorted(refs)],
            meta={"ptx_version": version, "ptx_target": target,
                  "files": sorted(set(files.values())), "loc_directives": len(locs)})

