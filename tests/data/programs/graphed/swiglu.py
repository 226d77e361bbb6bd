"""SwiGLU activation as a Triton kernel: y = silu(a) * b over the two halves of each row."""
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    a = tl.load(x_ptr + row * 2 * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * n_cols + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    # region act
    y = a * tl.sigmoid(a) * b
    # region store
    tl.store(y_ptr + row * n_cols + cols, y.to(tl.float16), mask=mask)


def swiglu(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    rows, two_n = x.shape
    n = two_n // 2
    swiglu_kernel[(rows,)](x, out, n, BLOCK=triton.next_power_of_2(n), num_warps=4)
    return out
