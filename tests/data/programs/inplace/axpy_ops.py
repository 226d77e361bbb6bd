"""An in-place AXPY (y += alpha * x) whose two arguments may view one buffer."""
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    # region store
    tl.store(y_ptr + offs, y + alpha * x, mask=mask)


def axpy_(x, y, alpha: float, block: int = 64) -> None:
    """y += alpha * x, in place."""
    n = y.numel()
    axpy_kernel[(triton.cdiv(n, block),)](x, y, n, alpha, BLOCK=block)
