"""Triton compiler outputs (a compiled kernel's ``asm`` dict).

- :mod:`collectors.triton.mlir`: TTGIR and TTIR with ``loc(...)``/``callsite(...)`` locations:
  inlining sites of library code, target, warps.
- :mod:`collectors.triton.ptx`: PTX with ``.loc`` line information and target.
"""

from __future__ import annotations

from argusdb.collectors.triton.mlir import TritonMlirReader
from argusdb.collectors.triton.ptx import PtxReader

READERS = [TritonMlirReader(), PtxReader()]
