"""Shared machinery of the source transforms: find a region's statements and insert lines.

A region is a span of source lines (see :mod:`argusdb.collectors.regions`); a transform needs whole
statements. :func:`region_block` picks the run of consecutive statements of one block that lie
inside the span: it starts at the earliest statement wholly inside the span (the outermost one on
a tie, so a marker on a ``for`` line takes the whole loop) and continues through the following
statements of the same block that are still wholly inside. Lines of the span outside that run
(a loop header that opens the next region, say) are not covered: a scope cannot enter in one block
and exit in another.

Example:
    >>> from argusdb.collectors.regions import ProgramSource
    >>> src = ProgramSource.from_path("softmax.py")
    >>> ed = SourceEdit(src)
    >>> ed.insert_before(12, ["pl.enter_scope('load')"], indent="    ")
    >>> "pl.enter_scope('load')" in ed.text()
    True
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from argusdb.collectors.regions import ProgramSource, Region, jit_functions, parse_regions
from argusdb.errors import InputError

_MARKER_TEXT = "# region"


@dataclass(frozen=True)
class Block:
    """A run of consecutive statements of one block that a region covers."""

    region: Region
    statements: tuple[ast.stmt, ...]

    @property
    def first_line(self) -> int:
        return self.statements[0].lineno

    @property
    def last_line(self) -> int:
        return self.statements[-1].end_lineno or self.statements[-1].lineno

    @property
    def indent(self) -> str:
        return " " * self.statements[0].col_offset


def find_region(src: ProgramSource, region_id: str) -> Region:
    """The marked region named by a full ID (``softmax/softmax_fwd/load``) or by its name.

    Raises:
        InputError: no such region, or a bare name that several kernels use.
    """
    regions = [r for r in parse_regions(src) if not r.is_kernel]
    hits = [r for r in regions if region_id in (r.region_id, r.name)]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(r.region_id for r in regions) or "none"
    if not hits:
        raise InputError(src.name, f"no region {region_id!r} (regions: {known})",
                         "name a region declared by a '# region <name>' marker")
    raise InputError(src.name, f"region name {region_id!r} is used by several kernels",
                     f"give the full region ID, one of: {', '.join(r.region_id for r in hits)}")


def _kernel(src: ProgramSource, region: Region) -> ast.FunctionDef:
    for fn in jit_functions(src):
        if fn.name == region.kernel:
            return fn
    raise InputError(src.name, f"kernel {region.kernel!r} not found", "check the region ID")


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    out: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        stmts = getattr(node, name, None)
        if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
            out.append(stmts)
    return out


def _inside(stmt: ast.stmt, region: Region) -> bool:
    return region.start_line <= stmt.lineno and (stmt.end_lineno or stmt.lineno) <= region.end_line


def region_block(src: ProgramSource, region: Region) -> Block:
    """The statements a region covers (see the module docstring for the rule).

    Raises:
        InputError: the region covers no whole statement.
    """
    best: tuple[int, int, list[ast.stmt], int] | None = None  # (line, depth, block, index)
    todo: list[tuple[ast.AST, int]] = [(_kernel(src, region), 0)]
    while todo:
        node, depth = todo.pop()
        for block in _blocks(node):
            for i, stmt in enumerate(block):
                if _inside(stmt, region):
                    key = (stmt.lineno, depth)
                    if best is None or key < best[:2]:
                        best = (stmt.lineno, depth, block, i)
                todo.append((stmt, depth + 1))
    if best is None:
        raise InputError(src.name, f"region {region.region_id} covers no whole statement",
                         "place the marker on or above the first statement of the region")
    _, _, block, i = best
    j = i
    while j + 1 < len(block) and _inside(block[j + 1], region):
        j += 1
    return Block(region, tuple(block[i:j + 1]))


def last_top_import_line(src: ProgramSource) -> int:
    """Line after which module-level helper code can go (the last top-level import)."""
    tree = ast.parse(src.text)
    last = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            last = stmt.end_lineno or stmt.lineno
    return last


class SourceEdit:
    """Line insertions on a source text, addressed by the original 1-based line numbers.

    Insertions never renumber the original lines for later calls, so several edits can be
    planned against one parse of the original text.
    """

    def __init__(self, src: ProgramSource) -> None:
        self._lines = src.text.splitlines()
        self._before: dict[int, list[str]] = {}
        self._after: dict[int, list[str]] = {}

    def insert_before(self, line: int, code: list[str], indent: str) -> None:
        """Insert ``code`` before original ``line``.

        A region marker at the end of that line moves to the first inserted line, so the
        inserted code stays inside the region the line opens.
        """
        original = self._lines[line - 1]
        at = original.find(_MARKER_TEXT)
        new = [indent + c for c in code]
        if at > 0 and original[:at].strip():
            marker = original[at:]
            self._lines[line - 1] = original[:at].rstrip()
            new[0] = f"{new[0]}  {marker}"
        self._before.setdefault(line, []).extend(new)

    def insert_after(self, line: int, code: list[str], indent: str) -> None:
        """Insert ``code`` after original ``line``."""
        self._after.setdefault(line, []).extend(indent + c for c in code)

    def text(self) -> str:
        out: list[str] = list(self._after.get(0, []))
        for n, line in enumerate(self._lines, start=1):
            out.extend(self._before.get(n, []))
            out.append(line)
            out.extend(self._after.get(n, []))
        return "\n".join(out) + "\n"
