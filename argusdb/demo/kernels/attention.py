"""Flash-attention-style forward kernel (fp16 in, fp32 accumulation, optional causal mask).

One program computes BLOCK_M query rows of one (batch, head) pair and streams over key/value
blocks with the online softmax (running max m_i and sum l_i), so the score matrix never leaves
the chip. Used as a measurement subject with regions for each stage of the inner loop.
"""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, stride_bh, stride_m, N_CTX,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    # region load_q
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        hi = (start_m + 1) * BLOCK_M
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        # region load_k
        cols = start_n + offs_n
        kt = tl.load(k_ptr + base + cols[None, :] * stride_m + offs_d[:, None])
        # region qk
        qk = tl.dot(q, kt) * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
        # region softmax
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
        # region load_v
        v = tl.load(v_ptr + base + cols[:, None] * stride_m + offs_d[None, :])
        # region pv
        acc = tl.dot(p.to(tl.float16), v, acc)
    # region epilogue
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16))


# Harness used by gpu/record.py (same contract in every kernel module of gpu/kernels).
KERNEL = "attn_fwd"
CONFIGS = {"causal": {"CAUSAL": True, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8,
                      "num_stages": 3}}


def setup(batch=4, heads=16, n_ctx=4096, head_dim=64, device="cuda", seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    shape = (batch, heads, n_ctx, head_dim)
    q, k, v = (torch.randn(shape, device=device, dtype=torch.float16, generator=g) for _ in "qkv")
    return {"q": q, "k": k, "v": v, "o": torch.empty_like(q)}


def launch(t, CAUSAL=True, BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3):
    q, k, v, o = t["q"], t["k"], t["v"], t["o"]
    batch, heads, n_ctx, head_dim = q.shape
    t["causal"] = CAUSAL
    grid = (triton.cdiv(n_ctx, BLOCK_M), batch * heads)
    return attn_fwd[grid](q, k, v, o, 1.0 / math.sqrt(head_dim), q.stride(1), q.stride(2), n_ctx,
                          HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=CAUSAL,
                          num_warps=num_warps, num_stages=num_stages)


def result(t):
    return t["o"]


def reference(t):
    q, k, v = (t[n].double() for n in "qkv")
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if t.get("causal", True):
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def run(iters=5, device="cuda", **config):
    t = setup(device=device)
    compiled = None
    for _ in range(iters):
        compiled = launch(t, **config)
    if device == "cuda":
        torch.cuda.synchronize()
    return compiled, rel_err(result(t), reference(t))
