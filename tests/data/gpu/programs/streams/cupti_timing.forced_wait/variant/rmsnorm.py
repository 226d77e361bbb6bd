"""RMSNorm of each row as a Triton kernel (no autotuning), launched on whatever stream is current."""
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
def rms_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    x = _argus_forced_wait(x)  # argusdb: forced wait
    w = _argus_forced_wait(w)  # argusdb: forced wait
    # region reduce
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    # region store
    tl.store(y_ptr + row * n_cols + cols, (x * inv * w).to(tl.float16), mask=mask)


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    rows, n = x.shape
    y = torch.empty_like(x)
    rms_kernel[(rows,)](x, w, y, n, eps, BLOCK=triton.next_power_of_2(n), num_warps=8)
    return y
