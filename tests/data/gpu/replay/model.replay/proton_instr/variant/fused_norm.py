"""LayerNorm as a Triton kernel, used by model.py."""
import torch
import triton
import triton.language as tl

from norm_config import NUM_WARPS, block_for

import os as _argus_os

if _argus_os.environ.get("TRITON_INTERPRET", "0") == "1":
    class _argus_pl:  # argusdb: the interpreter runs the kernel without Proton's scopes
        enter_scope = exit_scope = staticmethod(lambda name: None)
else:
    import triton.profiler.language as _argus_pl

    # argusdb: Triton-DSL scopes are recorded only once the 'triton' semantic is enabled.
    _argus_pl.enable_semantic("triton")


@triton.jit
def layernorm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    _argus_pl.enter_scope("load")
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    _argus_pl.exit_scope("load")
    # region mean
    mean = tl.sum(x, 0) / n_cols
    # region var
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, 0) / n_cols
    # region store
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = xc / tl.sqrt(var + eps) * w + b
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> torch.Tensor:
    shape = x.shape
    x2 = x.reshape(-1, shape[-1]).contiguous()
    y = torch.empty_like(x2)
    rows, cols = x2.shape
    layernorm_fwd[(rows,)](x2, weight, bias, y, cols, x2.stride(0), eps,
                           BLOCK=block_for(cols), num_warps=NUM_WARPS)
    return y.reshape(shape)
