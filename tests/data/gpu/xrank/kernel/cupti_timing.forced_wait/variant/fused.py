"""The MLP's fused bias + GELU: one Triton kernel with three ``# region`` markers."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import os as _argus_os
import triton as _argus_triton
import triton.language as _argus_tl

_ARGUS_INTERPRET = _argus_tl.constexpr(_argus_os.environ.get("TRITON_INTERPRET", "0") == "1")
_ARGUS_SHFL_SELF = _argus_tl.constexpr(
    "{.reg .u32 l; mov.u32 l, %laneid; shfl.sync.idx.b32 $0, $1, l, 0x1f, -1;}")


@_argus_triton.jit
def _argus_forced_wait(x):
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


@triton.jit
def bias_gelu(x_ptr, b_ptr, y_ptr, n_cols, n, BLOCK: tl.constexpr):
    # region load
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    x = _argus_forced_wait(x)  # argusdb: forced wait
    b = _argus_forced_wait(b)  # argusdb: forced wait
    # region gelu
    v = x + b
    inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    e = tl.exp(-2.0 * tl.abs(inner))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(inner >= 0, t, -t)
    y = 0.5 * v * (1.0 + t)
    # region store
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def bias_gelu_(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``gelu(x + b)`` (tanh form), ``b`` broadcast over the rows of ``x``."""
    y = torch.empty_like(x)
    n = x.numel()
    bias_gelu[(triton.cdiv(n, 1024),)](x, b, y, x.shape[-1], n, BLOCK=1024)
    return y
