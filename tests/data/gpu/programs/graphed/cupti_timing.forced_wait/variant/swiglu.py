"""SwiGLU activation as a Triton kernel: y = silu(a) * b over the two halves of each row."""
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
def swiglu_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    a = tl.load(x_ptr + row * 2 * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * n_cols + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    a = _argus_forced_wait(a)  # argusdb: forced wait
    b = _argus_forced_wait(b)  # argusdb: forced wait
    # region act
    y = a * tl.sigmoid(a) * b
    # region store
    tl.store(y_ptr + row * n_cols + cols, y.to(tl.float16), mask=mask)


def swiglu(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    rows, two_n = x.shape
    n = two_n // 2
    swiglu_kernel[(rows,)](x, out, n, BLOCK=triton.next_power_of_2(n), num_warps=4)
    return out
