"""Semantic regions of Triton source files.

A region is declared by a marker comment ``# region <name>`` inside an ``@triton.jit`` function,
either on a line of its own or at the end of a code line (then that line is the region's first).
It extends to the line before the next marker of the same function, or to the end of the function.
The function's lines before the first marker form the region ``_entry``. The kernel as a whole is
the region ``<program>/<kernel>``; a marked region is ``<program>/<kernel>/<name>``, where
``<program>`` is the source file's stem. IDs do not depend on line numbers, so a region keeps its
ID while its lines move between program versions.

Example:
    >>> src = ProgramSource.from_path("kernels/softmax.py")
    >>> [r.region_id for r in parse_regions(src)][:3]
    ['softmax/softmax_fwd', 'softmax/softmax_fwd/_entry', 'softmax/softmax_fwd/load']
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from argusdb.errors import InputError

_MARKER = re.compile(r"#\s*region\s+([A-Za-z_][A-Za-z0-9_.\-]*)\s*$")


@dataclass(frozen=True)
class ProgramSource:
    """A kernel source file as content: its name and text, never its absolute path."""

    name: str
    text: str

    @classmethod
    def from_path(cls, path: str | Path) -> ProgramSource:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(str(path), f"cannot read the program source ({exc})",
                             "pass --program the path of a readable Triton source file") from exc
        return cls(p.name, text)

    @property
    def stem(self) -> str:
        return self.name.rsplit(".", 1)[0]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True)
class Region:
    """A region and its line span (1-based, inclusive) in one program version."""

    region_id: str
    program: str
    kernel: str
    name: str | None
    start_line: int
    end_line: int

    @property
    def is_kernel(self) -> bool:
        return self.name is None


def _is_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Attribute):
        return target.attr in {"jit", "autotune", "heuristics"}
    return isinstance(target, ast.Name) and target.id in {"jit", "autotune", "heuristics"}


def jit_functions(src: ProgramSource) -> list[ast.FunctionDef]:
    """The ``@triton.jit`` (also autotuned or heuristics-wrapped) functions of a source file."""
    try:
        tree = ast.parse(src.text, filename=src.name)
    except SyntaxError as exc:
        raise InputError(src.name, f"not valid Python (line {exc.lineno}: {exc.msg})",
                         "pass --program a Triton kernel source file") from exc
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and any(_is_jit(d) for d in n.decorator_list)]


def _markers(src: ProgramSource) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src.text).readline):
            if tok.type == tokenize.COMMENT:
                m = _MARKER.match(tok.string)
                if m:
                    out.append((tok.start[0], m.group(1)))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise InputError(src.name, f"not valid Python ({exc})",
                         "pass a Triton kernel source file") from exc
    return out


def parse_regions(src: ProgramSource) -> list[Region]:
    """All regions of a source file: one per kernel, plus ``_entry`` and each marked region.

    Raises:
        InputError: the file is not Python, or a region name repeats inside one kernel.
    """
    functions = jit_functions(src)  # a SyntaxError is reported before tokenizing
    markers = _markers(src)
    regions: list[Region] = []
    for fn in functions:
        start, end = fn.lineno, fn.end_lineno or fn.lineno
        kid = f"{src.stem}/{fn.name}"
        regions.append(Region(kid, src.stem, fn.name, None, start, end))
        inside = [(ln, nm) for ln, nm in markers if start <= ln <= end]
        names = [nm for _, nm in inside]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise InputError(src.name, f"region {sorted(dup)[0]!r} is declared twice in kernel "
                             f"{fn.name}", "give each '# region <name>' marker a unique name")
        first = inside[0][0] if inside else end + 1
        if first > start:
            regions.append(Region(f"{kid}/_entry", src.stem, fn.name, "_entry", start,
                                  first - 1))
        for i, (ln, nm) in enumerate(inside):
            stop = inside[i + 1][0] - 1 if i + 1 < len(inside) else end
            regions.append(Region(f"{kid}/{nm}", src.stem, fn.name, nm, ln, stop))
    return regions
