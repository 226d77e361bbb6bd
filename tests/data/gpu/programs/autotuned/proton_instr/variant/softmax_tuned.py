"""Row softmax whose launch configuration is chosen by @triton.autotune."""
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


@triton.autotune(configs=[triton.Config({}, num_warps=1), triton.Config({}, num_warps=2),
                          triton.Config({}, num_warps=8)], key=["n_cols"])
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    _argus_pl.enter_scope("load")
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    _argus_pl.exit_scope("load")
    # region reduce
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    d = tl.sum(e, 0)
    # region store
    tl.store(y_ptr + row * stride + cols, e / d, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return y
