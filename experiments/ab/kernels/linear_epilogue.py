"""Y = relu(X @ W + bias) + residual in fp16: a GEMM with a fused epilogue (bias, activation,
residual add and cast in the store region), for a tall, thin shape (many rows, K = 1024).

Written for this benchmark on the skeleton of the Triton tutorial "Matrix Multiplication"
(03-matrix-multiplication.py, whose ``leaky_relu`` epilogue it extends).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def linear_epilogue(x_ptr, w_ptr, bias_ptr, r_ptr, y_ptr, M, N, K: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + (rm % M)[:, None] * K + rk[None, :]
    w_ptrs = w_ptr + rk[:, None] * N + (rn % N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # region load_tiles
        xt = tl.load(x_ptrs, mask=rk[None, :] < K - k0, other=0.0)
        wt = tl.load(w_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        # region mma
        acc = tl.dot(xt, wt, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * N
    # region epilogue
    ok = (rm[:, None] < M) & (rn[None, :] < N)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    res = tl.load(r_ptr + rm[:, None] * N + rn[None, :], mask=ok, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0) + res
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y.to(tl.float16), mask=ok)


KERNEL = "linear_epilogue"
LOAD_REGION = "load_tiles"
SPACE = {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [16, 32, 64, 128],
         "GROUP_M": [1, 4, 8, 16], "num_warps": [2, 4, 8], "num_stages": [1, 2, 3, 4, 5]}
BASE = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1, "num_warps": 4,
        "num_stages": 1}
TOL = 1e-2
SHAPES = {"full": (16384, 2048, 1024), "tiny": (40, 48, 32)}
SMEM_LIMIT = 227 * 1024


def setup(size, device, seed=0):
    m, n, k = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = (torch.randn(m, k, generator=g) / k ** 0.5).half().to(device)
    w = torch.randn(k, n, generator=g).half().to(device)
    bias = torch.randn(n, generator=g).half().to(device)
    r = torch.randn(m, n, generator=g).half().to(device)
    return {"x": x, "w": w, "bias": bias, "r": r,
            "y": torch.empty(m, n, dtype=torch.float16, device=device)}


def launch(kernel, t, cfg):
    x, w = t["x"], t["w"]
    m, k = x.shape
    n = w.shape[1]
    smem = 2 * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * cfg["num_stages"]
    if smem > SMEM_LIMIT:
        raise ValueError(f"{smem} bytes of shared memory for the pipelined tiles")
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    return kernel[grid](x, w, t["bias"], t["r"], t["y"], m, n, k, BLOCK_M=cfg["BLOCK_M"],
                        BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def result(t):
    return t["y"]


def reference(t):
    y = t["x"].double() @ t["w"].double() + t["bias"].double()
    return torch.relu(y) + t["r"].double()
