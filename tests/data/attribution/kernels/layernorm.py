"""Row layer norm: tl.sum (triton/language/standard.py) is called from two regions."""
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_fwd(x_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    # region mean
    mean = tl.sum(x, 0) / n_cols
    # region var
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, 0) / n_cols
    # region store
    y = xc / tl.sqrt(var + eps)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


def run(rows=16384, cols=1024, iters=5):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    compiled = None
    for _ in range(iters):
        compiled = layernorm_fwd[(rows,)](x, y, cols, x.stride(0), 1e-5,
                                          BLOCK=triton.next_power_of_2(cols), num_warps=4)
    torch.cuda.synchronize()
    ref = torch.nn.functional.layer_norm(x, (cols,), eps=1e-5)
    err = ((y - ref).norm() / ref.norm()).item()
    return compiled, err
