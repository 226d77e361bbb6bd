"""GELU (tanh form) with Triton kernels for forward and backward, as a torch.autograd.Function."""
import torch
import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    return 2 * tl.sigmoid(2 * x) - 1


@triton.jit
def gelu_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # region math
    t = _tanh(0.7978845608 * (x + 0.044715 * x * x * x))
    y = 0.5 * x * (1 + t)
    # region store
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def gelu_bwd(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # region grad
    u = 0.7978845608 * (x + 0.044715 * x * x * x)
    t = _tanh(u)
    du = 0.7978845608 * (1 + 3 * 0.044715 * x * x)
    g = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du
    # region store
    tl.store(dx_ptr + offs, dy * g, mask=mask)


class Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        ctx.save_for_backward(x)
        y = torch.empty_like(x)
        n = x.numel()
        gelu_fwd[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

    @staticmethod
    def backward(ctx, dy):  # type: ignore[no-untyped-def]
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        n = x.numel()
        gelu_bwd[(triton.cdiv(n, 1024),)](x, dy.contiguous(), dx, n, BLOCK=1024)
        return dx
