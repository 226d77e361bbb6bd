"""RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, one program per row."""
import torch
import triton
import triton.language as tl

from ._jit import mean_square

import os as _argus_os

if _argus_os.environ.get("TRITON_INTERPRET", "0") == "1":
    class _argus_pl:  # argusdb: the interpreter runs the kernel without Proton's scopes
        enter_scope = exit_scope = staticmethod(lambda name: None)
else:
    import triton.profiler.language as _argus_pl

    # argusdb: Triton-DSL scopes are recorded only once the 'triton' semantic is enabled.
    _argus_pl.enable_semantic("triton")


@triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"])})
@triton.jit
def rms_kernel(x_ptr, w_ptr, y_ptr, n, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    # region load
    _argus_pl.enter_scope("load")
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    _argus_pl.exit_scope("load")
    # region stats
    r = 1.0 / tl.sqrt(mean_square(x, n) + eps)
    # region scale
    y = x * r * w
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    flat = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(flat)
    grid = lambda meta: (flat.shape[0],)  # noqa: E731
    rms_kernel[grid](flat, w, y, flat.shape[-1], flat.stride(0), eps)
    return y.reshape(x.shape)
