"""Flash-attention forward (non-causal), fp16 Q/K/V of shape (B*H, N, D), online softmax.

Adapted from the Triton tutorial "Fused Attention" (06-fused-attention.py, forward pass,
simplified: no causal stages, no TMA descriptors, plain pointer arithmetic).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx: tl.constexpr, sm_scale, HEAD: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh * n_ctx * HEAD
    rm = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD)
    rn = tl.arange(0, BLOCK_N)
    # region load_q
    q = tl.load(q_ptr + base + rm[:, None] * HEAD + rd[None, :], mask=rm[:, None] < n_ctx,
                other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD), tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in tl.range(0, n_ctx, BLOCK_N, num_stages=STAGES):
        cols = start_n + rn
        # region load_k
        k = tl.load(k_ptr + base + cols[None, :] * HEAD + rd[:, None], mask=cols[None, :] < n_ctx,
                    other=0.0)
        # region qk
        qk = tl.dot(q, k) * qk_scale
        qk = tl.where(cols[None, :] < n_ctx, qk, float("-inf"))
        # region softmax
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
        # region load_v
        v = tl.load(v_ptr + base + cols[:, None] * HEAD + rd[None, :], mask=cols[:, None] < n_ctx,
                    other=0.0)
        # region pv
        acc = tl.dot(p.to(tl.float16), v, acc)
    # region store
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * HEAD + rd[None, :], out.to(tl.float16),
             mask=rm[:, None] < n_ctx)


KERNEL = "attn_fwd"
LOAD_REGION = "load_k"
SPACE = {"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [16, 32, 64, 128], "STAGES": [1, 2, 3, 4],
         "num_warps": [2, 4, 8]}
BASE = {"BLOCK_M": 32, "BLOCK_N": 32, "STAGES": 1, "num_warps": 4}
TOL = 1e-2
SHAPES = {"full": (32, 2048, 64), "tiny": (2, 40, 16)}


def setup(size, device, seed=0):
    bh, n, d = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    q, k, v = (torch.randn(bh, n, d, generator=g).half().to(device) for _ in range(3))
    return {"q": q, "k": k, "v": v, "o": torch.empty_like(q)}


def launch(kernel, t, cfg):
    q = t["q"]
    bh, n, d = q.shape
    grid = (triton.cdiv(n, cfg["BLOCK_M"]), bh)
    return kernel[grid](q, t["k"], t["v"], t["o"], n, d ** -0.5, HEAD=d,
                        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], STAGES=cfg["STAGES"],
                        num_warps=cfg["num_warps"])


def result(t):
    return t["o"]


def reference(t):
    q, k, v = (t[x].double() for x in "qkv")
    s = q @ k.transpose(1, 2) * q.shape[-1] ** -0.5
    return torch.softmax(s, -1) @ v
