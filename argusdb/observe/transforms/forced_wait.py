"""``forced_wait``: a variant whose region's global loads complete before the next stage.

After the last ``tl.load`` assignment of the region in each block, every loaded value is passed
through ``_argus_forced_wait``, an inline-PTX identity that ptxas cannot remove: a warp shuffle of
each register to its own lane (``shfl.sync.idx`` with ``%laneid``). The shuffle reads the load's
destination register, so the warp stalls on the load's scoreboard right there, before any
instruction of the next stage, instead of at the first real use. A plain ``mov`` would not do:
ptxas propagates copies and drops it (seen on sm_90 with Triton 3.6's ptxas). The SASS of the
variant shows one ``SHFL.IDX`` reading ``SR_LANEID`` per forced 32-bit register.

Where the loaded values feed tensor cores from shared memory (a software-pipelined matmul
loop's ``cp.async`` tiles, tiles loaded by tensor descriptors), the shuffles also pull each tile
into registers and write it back to shared memory (seen on sm_90: LDS, STS and LDSM added, a
proxy fence, fewer warpgroup fences). The variant then does more than wait, and its extra time
is an upper bound of what the wait alone costs: ``derivation_probe`` compares the two binaries'
data-movement instructions and says so (``footprint``, argusdb/queries/derivation/probe.sql).

Under ``TRITON_INTERPRET=1`` (no PTX) the helper returns its input unchanged, so the variant's
result can be checked against the parent on a CPU.

Example:
    >>> v = forced_wait(ProgramSource.from_path("argusdb/demo/kernels/softmax.py"), "load")
    >>> v.transform
    'forced_wait:softmax/softmax_fwd/load'
"""

from __future__ import annotations

import ast

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.observe.transforms._edit import (
    SourceEdit,
    find_region,
    last_top_import_line,
    region_block,
)
from argusdb.observe.transforms.variant import Variant

HELPER = "_argus_forced_wait"

# 16-bit values are packed two to a 32-bit register (pack=2), so one shuffle covers both.
_HELPER_SOURCE = f'''
import os as _argus_os
import triton as _argus_triton
import triton.language as _argus_tl

_ARGUS_INTERPRET = _argus_tl.constexpr(_argus_os.environ.get("TRITON_INTERPRET", "0") == "1")
_ARGUS_SHFL_SELF = _argus_tl.constexpr(
    "{{.reg .u32 l; mov.u32 l, %laneid; shfl.sync.idx.b32 $0, $1, l, 0x1f, -1;}}")


@_argus_triton.jit
def {HELPER}(x):
    # argusdb forced wait: a shuffle to the own lane reads x, so the warp waits for its load here.
    if _ARGUS_INTERPRET:
        y = x
    elif x.dtype.primitive_bitwidth == 16:
        y = _argus_tl.inline_asm_elementwise(_ARGUS_SHFL_SELF, "=r,r", [x], dtype=x.dtype,
                                             is_pure=False, pack=2)
    else:
        y = _argus_tl.inline_asm_elementwise(_ARGUS_SHFL_SELF, "=r,r", [x], dtype=x.dtype,
                                             is_pure=False, pack=1)
    return y
'''.splitlines()


def _is_load(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if (isinstance(f, ast.Attribute) and f.attr == "load") or (
                    isinstance(f, ast.Name) and f.id == "load"):
                return True
    return False


def _targets(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None and _is_load(
            stmt.value):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names: list[str] = []
        for t in targets:
            elts = t.elts if isinstance(t, ast.Tuple) else [t]
            names.extend(e.id for e in elts if isinstance(e, ast.Name))
        return names
    return []


def _load_groups(stmts: tuple[ast.stmt, ...]) -> list[tuple[ast.stmt, list[str]]]:
    """Per block under ``stmts``: (last load statement, names it and earlier loads assigned)."""
    groups: list[tuple[ast.stmt, list[str]]] = []

    def visit(block: list[ast.stmt]) -> None:
        last: ast.stmt | None = None
        names: list[str] = []
        for stmt in block:
            got = _targets(stmt)
            if got:
                last = stmt
                names.extend(n for n in got if n not in names)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner)
        if last is not None:
            groups.append((last, names))

    visit(list(stmts))
    return groups


def forced_wait(src: ProgramSource, region_id: str) -> Variant:
    """Variant of ``src`` whose region's ``tl.load`` results are waited for before going on.

    Raises:
        InputError: the region does not exist or assigns no ``tl.load`` result to a name.
    """
    region = find_region(src, region_id)
    block = region_block(src, region)
    groups = _load_groups(block.statements)
    if not groups:
        raise InputError(src.name, f"region {region.region_id} assigns no tl.load result",
                         "force a wait in a region that loads from global memory "
                         "(x = tl.load(...))")
    edit = SourceEdit(src)
    for stmt, names in groups:
        indent = " " * stmt.col_offset
        edit.insert_after(stmt.end_lineno or stmt.lineno,
                          [f"{n} = {HELPER}({n})  # argusdb: forced wait" for n in names], indent)
    edit.insert_after(last_top_import_line(src), _HELPER_SOURCE, "")
    return Variant(ProgramSource(src.name, edit.text()), f"forced_wait:{region.region_id}",
                   options={}, regions=(region.region_id,))
