"""out = x.T (+ bias per output row) for an fp16 matrix: a memory-bound 2D tiled op whose loads
and stores walk memory in different orders, so the tile shape decides coalescing.

Written for this benchmark.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def transpose_bias(x_ptr, b_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   EVEN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # region load
    if EVEN:
        x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
        b = tl.load(b_ptr + rn)
    else:
        ok = (rm[:, None] < M) & (rn[None, :] < N)
        x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=ok, other=0.0)
        b = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    # region store
    y = tl.trans(x + b[None, :])
    if EVEN:
        tl.store(y_ptr + rn[:, None] * M + rm[None, :], y)
    else:
        tl.store(y_ptr + rn[:, None] * M + rm[None, :], y,
                 mask=(rn[:, None] < N) & (rm[None, :] < M))


KERNEL = "transpose_bias"
LOAD_REGION = "load"
SPACE = {"BLOCK_M": [16, 32, 64, 128, 256], "BLOCK_N": [16, 32, 64, 128, 256], "EVEN": [0, 1],
         "num_warps": [1, 2, 4, 8, 16]}
BASE = {"BLOCK_M": 16, "BLOCK_N": 16, "EVEN": 0, "num_warps": 4}
TOL = 1e-3
SHAPES = {"full": (8192, 8192), "tiny": (48, 40)}


def setup(size, device, seed=0):
    m, n = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(m, n, generator=g).half().to(device)
    b = torch.randn(n, generator=g).half().to(device)
    return {"x": x, "b": b, "y": torch.empty(n, m, dtype=torch.float16, device=device)}


def launch(kernel, t, cfg):
    x = t["x"]
    m, n = x.shape
    if cfg["EVEN"] and (m % cfg["BLOCK_M"] or n % cfg["BLOCK_N"]):
        raise ValueError("EVEN needs the shape a multiple of the tile")
    grid = (triton.cdiv(m, cfg["BLOCK_M"]), triton.cdiv(n, cfg["BLOCK_N"]))
    return kernel[grid](x, t["b"], t["y"], m, n, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                        EVEN=cfg["EVEN"], num_warps=cfg["num_warps"])


def result(t):
    return t["y"]


def reference(t):
    return (t["x"].double() + t["b"].double()[None, :]).T
