"""Tiled matmul kernel, used as a measurement subject."""
import torch, triton, triton.language as tl, sys, json, os

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    npn = tl.cdiv(N, BN)
    pm = pid // npn
    pn = pid % npn
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):                       # region mainloop
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc += tl.dot(a, b)
    c = acc.to(tl.float16)                          # region epilogue
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, c)


# Harness used by gpu/record.py (same contract in every kernel module of gpu/kernels).
# CONFIGS are the versions timed for region-keyed diffs: the seed's configuration and two others.
KERNEL = "matmul_kernel"
CONFIGS = {
    "bk64_s3": {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8, "num_stages": 3},
    "bk32_s1": {"BM": 128, "BN": 128, "BK": 32, "num_warps": 8, "num_stages": 1},
    "bn256_s3": {"BM": 128, "BN": 256, "BK": 64, "num_warps": 8, "num_stages": 3},
}


def setup(n=4096, device="cuda", seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(n, n, device=device, dtype=torch.float16, generator=g)
    b = torch.randn(n, n, device=device, dtype=torch.float16, generator=g)
    return {"a": a, "b": b, "c": torch.empty(n, n, device=device, dtype=torch.float16)}


def launch(t, BM=128, BN=128, BK=64, num_warps=8, num_stages=3):
    a, b, c = t["a"], t["b"], t["c"]
    n = a.shape[0]
    grid = ((n // BM) * (n // BN),)
    return matmul_kernel[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK,
                               num_warps=num_warps, num_stages=num_stages)


def result(t):
    return t["c"]


def reference(t):
    return t["a"].float() @ t["b"].float()


def rel_err(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def run(n=4096, iters=5, device="cuda", **config):
    t = setup(n, device)
    k = None
    for _ in range(iters):
        k = launch(t, **config)
    if device == "cuda":
        torch.cuda.synchronize()
    return k, rel_err(result(t), reference(t))
