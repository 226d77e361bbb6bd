"""y = x * scale + bias as a Triton kernel, registered as a torch custom op (triton_op)."""
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

import os as _argus_os

if _argus_os.environ.get("TRITON_INTERPRET", "0") == "1":
    class _argus_pl:  # argusdb: the interpreter runs the kernel without Proton's scopes
        enter_scope = exit_scope = staticmethod(lambda name: None)
else:
    import triton.profiler.language as _argus_pl

    # argusdb: Triton-DSL scopes are recorded only once the 'triton' semantic is enabled.
    _argus_pl.enable_semantic("triton")


@triton.jit
def scale_add_kernel(x_ptr, b_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    _argus_pl.enter_scope("load")
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    _argus_pl.exit_scope("load")
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
