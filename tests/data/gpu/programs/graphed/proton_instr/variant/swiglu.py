"""SwiGLU activation as a Triton kernel: y = silu(a) * b over the two halves of each row."""
import torch
import triton
import triton.language as tl

import os as _argus_os

if _argus_os.environ.get("TRITON_INTERPRET", "0") == "1":
    class _argus_pl:  # argusdb: the interpreter runs the kernel without Proton's scopes
        enter_scope = exit_scope = staticmethod(lambda name: None)
else:
    import triton.profiler.language as _argus_pl

    # argusdb: Triton-DSL scopes are recorded only once the 'triton' semantic is enabled.
    _argus_pl.enable_semantic("triton")


@triton.jit
def swiglu_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    _argus_pl.enter_scope("load")
    a = tl.load(x_ptr + row * 2 * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * n_cols + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    _argus_pl.exit_scope("load")
    # region act
    y = a * tl.sigmoid(a) * b
    # region store
    tl.store(y_ptr + row * n_cols + cols, y.to(tl.float16), mask=mask)


def swiglu(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    rows, two_n = x.shape
    n = two_n // 2
    swiglu_kernel[(rows,)](x, out, n, BLOCK=triton.next_power_of_2(n), num_warps=4)
    return out
