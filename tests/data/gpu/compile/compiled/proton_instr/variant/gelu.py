"""The user's own GELU (tanh approximation) as a Triton kernel."""
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
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    _argus_pl.enter_scope("load")
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    _argus_pl.exit_scope("load")
    # region math
    # 0.5 * (1 + tanh(a)) == sigmoid(2 * a), a = sqrt(2 / pi) * (x + 0.044715 * x^3)
    inner = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    y = x * tl.sigmoid(inner)
    # region store
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
