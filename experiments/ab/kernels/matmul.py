"""C = A @ B in fp16 with fp32 accumulation: a software-pipelined GEMM.

Adapted from the Triton tutorial "Matrix Multiplication" (03-matrix-multiplication.py): grouped
tile order (GROUP_M), a K loop whose loads Triton pipelines over num_stages; EVEN_K drops the
K-bounds masks (a masking transform).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K: tl.constexpr, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # region load_tiles
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=rk[None, :] < K - k0, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - k0, other=0.0)
        # region mma
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    # region store
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + cm[:, None] * scm + cn[None, :] * scn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))


KERNEL = "matmul_kernel"
LOAD_REGION = "load_tiles"
SPACE = {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [16, 32, 64, 128],
         "GROUP_M": [1, 8], "EVEN_K": [0, 1], "num_warps": [2, 4, 8], "num_stages": [1, 2, 3, 4, 5]}
BASE = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1, "EVEN_K": 0, "num_warps": 4,
        "num_stages": 2}
TOL = 1e-2
SHAPES = {"full": (4096, 4096, 4096), "tiny": (48, 40, 64)}
SMEM_LIMIT = 227 * 1024


def setup(size, device, seed=0):
    m, n, k = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / k ** 0.5).half().to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    return {"a": a, "b": b, "c": torch.empty(m, n, dtype=torch.float16, device=device)}


def check(cfg, t):
    k = t["a"].shape[1]
    if cfg["EVEN_K"] and k % cfg["BLOCK_K"]:
        raise ValueError("EVEN_K needs K a multiple of BLOCK_K")
    smem = 2 * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * cfg["num_stages"]
    if smem > SMEM_LIMIT:
        raise ValueError(f"{smem} bytes of shared memory for the pipelined tiles")


def launch(kernel, t, cfg):
    a, b, c = t["a"], t["b"], t["c"]
    m, k = a.shape
    n = b.shape[1]
    check(cfg, t)
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    return kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                        BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"], EVEN_K=cfg["EVEN_K"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def result(t):
    return t["c"]


def reference(t):
    return t["a"].double() @ t["b"].double()
