"""y = x * scale + bias as a Triton kernel, registered as a torch custom op (triton_op)."""
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

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
def scale_add_kernel(x_ptr, b_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    x = _argus_forced_wait(x)  # argusdb: forced wait
    b = _argus_forced_wait(b)  # argusdb: forced wait
    # region math
    y = x * scale + b
    # region store
    tl.store(y_ptr + offs, y, mask=mask)


@triton_op("demo::scale_add", mutates_args={})
def scale_add(x: torch.Tensor, b: torch.Tensor, scale: float) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    wrap_triton(scale_add_kernel)[(triton.cdiv(n, 1024),)](x, b, y, n, scale, BLOCK=1024)
    return y
