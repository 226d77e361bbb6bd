"""RMSNorm of each row as a Triton kernel (no autotuning), launched on whatever stream is current."""
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
def rms_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    _argus_pl.enter_scope("load")
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    _argus_pl.exit_scope("load")
    # region reduce
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    # region store
    tl.store(y_ptr + row * n_cols + cols, (x * inv * w).to(tl.float16), mask=mask)


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    rows, n = x.shape
    y = torch.empty_like(x)
    rms_kernel[(rows,)](x, w, y, n, eps, BLOCK=triton.next_power_of_2(n), num_warps=8)
    return y
