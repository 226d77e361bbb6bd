"""Triton helpers shared by the package's kernels (inlined into each caller)."""
import triton
import triton.language as tl


@triton.jit
def mean_square(x, n):
    return tl.sum(x * x, axis=0) / n
