"""Triton MLIR dumps: TTGIR (``*.ttgir``) and TTIR (``*.ttir``) with source locations.

A compiled Triton kernel's ``asm["ttgir"]`` (and ``asm["ttir"]``) prints every operation with a
location, usually an alias defined at the end of the module::

    module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", ...} {
      tt.func public @softmax_fwd(...) {
        %x_10 = arith.maxnumf %x_8, %x_9 : f32 loc(#loc41)
    ...
    #loc11 = loc(".../triton/language/standard.py":170:27)
    #loc37 = loc(callsite(#loc9 at #loc33))
    #loc41 = loc(callsite(#loc11 at #loc37))

An operation whose location is a ``callsite`` was inlined: its innermost frame is the inlined
code (``standard.py:170``), its outermost frame the kernel line that called it (``softmax.py:15``).
Each (kernel, innermost frame, outermost frame) becomes an ``inline_site`` row with the number of
operations that carry it: that is where ownership of instructions by source lines starts to be
shared. The target (``ttg.target``), warps and CTAs go to the run; TTIR, which precedes layout
assignment, states no target.

Completeness: the ``module { ... }`` must close (its ``}`` comes before the location aliases)
and every alias a location names must be defined; a dump cut short is refused.

Example:
    >>> art = TritonMlirReader().read(Path("softmax.ttgir"))
    >>> art.target, art.meta["module"]["ttg.num-warps"]
    ('sm_90', 4)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import Artefact, SourceRef, open_text
from argusdb.collectors.triton.locations import Frame, Locations, LocError, trailing_loc
from argusdb.collectors.validate import Braces, known_target
from argusdb.errors import InputError

ADAPTER_VERSION = "triton.mlir/1"
_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_MODULE = re.compile(r"^\s*module\b(?:\s+attributes\s*\{(.*)\})?")
_ATTR = re.compile(r'"?([\w.\-]+)"?\s*=\s*("[^"]*"|[^,}]+)')
_FUNC = re.compile(r"^\s*tt\.func\s+(public\s+|private\s+)?@([\w$.]+)")
_FILE_LOC = re.compile(r'"([^"]+)":(\d+)(?::\d+)?')


def _attr_value(text: str) -> Any:
    text = text.strip()
    if text.startswith('"'):
        return text.strip('"')
    num = text.split(":", 1)[0].strip()
    try:
        return int(num)
    except ValueError:
        return text


class TritonMlirReader:
    """TTGIR and TTIR text dumps of a compiled Triton kernel."""

    kind = "triton.mlir"

    def sniff(self, path: Path, head: bytes) -> bool:
        text = head.decode("utf-8", "replace")
        return bool(re.search(r"^#loc\d* = loc\(", text, re.M)) or (
            "tt.func" in text and "loc(" in text)

    def _scan(self, path: Path) -> tuple[dict[str, str], dict[str, Any], list[str]]:
        """Aliases, module attributes and the kernel names (a pass over the file)."""
        defs: dict[str, str] = {}
        attrs: dict[str, Any] = {}
        kernels: list[str] = []
        saw_module = False
        closed = False
        braces = Braces(path, "pass the complete dump (kernel.asm['ttgir'])")
        with open_text(path) as fh:
            for no, line in enumerate(fh, start=1):
                if not line.startswith("#") and braces.line(no, line) == 0 and saw_module:
                    closed = True
                if m := _ALIAS.match(line):
                    defs[m.group(1)] = m.group(2)
                elif not saw_module and (m := _MODULE.match(line)):
                    saw_module = True
                    attrs = {k: _attr_value(v) for k, v in _ATTR.findall(m.group(1) or "")}
                elif m := _FUNC.match(line):
                    if (m.group(1) or "").strip() != "private":
                        kernels.append(m.group(2))
        if not saw_module:
            raise InputError(str(path), "has no 'module' operation",
                             "pass a complete TTGIR/TTIR dump (kernel.asm['ttgir'])")
        if not kernels:
            raise InputError(str(path), "defines no tt.func", "pass the dump of a compiled "
                             "Triton kernel (kernel.asm['ttgir'])")
        braces.end("the module")
        if not closed:
            raise InputError(str(path), "the module's '{' is never closed: the file is cut short",
                             "pass the complete dump (kernel.asm['ttgir'])")
        return defs, attrs, kernels

    def read(self, path: Path) -> Artefact:
        defs, attrs, kernels = self._scan(path)
        refs = {(f, ln) for body in defs.values() for f, ln in
                ((m.group(1).replace("\\", "/").rsplit("/", 1)[-1], int(m.group(2)))
                 for m in _FILE_LOC.finditer(body))}
        ttgir = any(k.startswith("ttg.") for k in attrs)
        kind = "triton.ttgir" if ttgir else "triton.ttir"
        sites = self._sites(path, Locations(defs))  # parses every location: errors surface now
        for (_, callee, caller), _n in sites.items():
            refs.update({callee, caller})
        return Artefact(
            path=str(path), collector="triton", kind=kind, tool="triton",
            adapter_version=ADAPTER_VERSION, export_schema="ttgir" if ttgir else "ttir",
            batches=lambda: self._batches(sites),
            target=known_target(path, attrs.get("ttg.target"), "target (ttg.target)")
            if ttgir else None,
            kernels=sorted(set(kernels)),
            source_refs=[SourceRef(f, ln) for f, ln in sorted(refs)],
            meta={"module": attrs, "inline_sites": len(sites), "ir": kind.split(".")[1]})

    def _sites(self, path: Path, locs: Locations) -> Counter[tuple[str, Frame, Frame]]:
        sites: Counter[tuple[str, Frame, Frame]] = Counter()
        kernel: str | None = None
        with open_text(path) as fh:
            for no, line in enumerate(fh, start=1):
                if line.startswith("#"):
                    continue
                if m := _FUNC.match(line):
                    kernel = m.group(2)
                    continue
                s = line.lstrip()
                if kernel is None or s.startswith("^") or s.startswith("} loc("):
                    continue
                expr = trailing_loc(line)
                if expr is None or ("callsite" not in expr and "#loc" not in expr):
                    continue
                try:
                    frames = locs.frames(expr)
                except (LocError, IndexError, ValueError) as exc:
                    raise InputError(str(path), f"line {no}: cannot resolve location "
                                     f"loc({expr}) ({exc})", "the dump is truncated or "
                                     "corrupt; dump kernel.asm['ttgir'] again") from exc
                if len(frames) >= 2:
                    sites[(kernel, frames[0], frames[-1])] += 1
        return sites

    @staticmethod
    def _batches(sites: Counter[tuple[str, Frame, Frame]]
                 ) -> Iterator[tuple[str, pa.RecordBatch]]:
        if not sites:
            return
        rows = sorted(sites.items())
        yield "inline_site", pa.RecordBatch.from_arrays(
            [pa.array([k for (k, _, _), _ in rows], pa.string()),
             pa.array([c[0] for (_, c, _), _ in rows], pa.string()),
             pa.array([c[1] for (_, c, _), _ in rows], pa.int32()),
             pa.array([r[0] for (_, _, r), _ in rows], pa.string()),
             pa.array([r[1] for (_, _, r), _ in rows], pa.int32()),
             pa.array([n for _, n in rows], pa.int32())],
            names=["kernel", "callee_file", "callee_line", "caller_file", "caller_line",
                   "n_ops"])
