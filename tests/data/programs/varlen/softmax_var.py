"""Row softmax over batches whose row length changes from call to call (variable sequence
lengths): Triton compiles one binary per block size and per specialization of ``n_cols``
(divisible by 16 or not), so the program launches several binaries of one kernel."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    # region exp
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    # region store
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, n = x.shape
    y = torch.empty(rows, n, device=x.device, dtype=torch.float32)
    softmax_kernel[(rows,)](x, y, n, BLOCK=triton.next_power_of_2(n), num_warps=4)
    return y
