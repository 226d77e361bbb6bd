"""y = gelu(x + bias[col]) over a flat fp16 tensor: a memory-bound elementwise op whose moves are
the block size, masking (EVEN: no bounds mask when the size divides) and vector-width hints
(HINT: ``tl.multiple_of``/``tl.max_contiguous`` on the offsets, so loads can be 128-bit wide).

Written for this benchmark (the Triton tutorial "Vector Addition" is its skeleton).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_bias(x_ptr, b_ptr, y_ptr, n, n_cols, BLOCK: tl.constexpr, EVEN: tl.constexpr,
              HINT: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if HINT:
        offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    # region load
    if EVEN:
        x = tl.load(x_ptr + offs)
        b = tl.load(b_ptr + offs % n_cols)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        b = tl.load(b_ptr + offs % n_cols, mask=offs < n, other=0.0)
    # region compute
    v = x.to(tl.float32) + b.to(tl.float32)
    y = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    # region store
    if EVEN:
        tl.store(y_ptr + offs, y.to(tl.float16))
    else:
        tl.store(y_ptr + offs, y.to(tl.float16), mask=offs < n)


KERNEL = "gelu_bias"
LOAD_REGION = "load"
SPACE = {"BLOCK": [128, 256, 512, 1024, 2048, 4096, 8192], "EVEN": [0, 1], "HINT": [0, 1],
         "num_warps": [1, 2, 4, 8, 16]}
BASE = {"BLOCK": 256, "EVEN": 0, "HINT": 0, "num_warps": 4}
TOL = 2e-3
SHAPES = {"full": (16384, 4096), "tiny": (4, 64)}


def setup(size, device, seed=0):
    rows, cols = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, cols, generator=g).half().to(device)
    b = torch.randn(cols, generator=g).half().to(device)
    return {"x": x, "b": b, "y": torch.empty_like(x)}


def launch(kernel, t, cfg):
    x = t["x"]
    n = x.numel()
    if cfg["EVEN"] and n % cfg["BLOCK"]:
        raise ValueError("EVEN needs the size a multiple of BLOCK")
    grid = (triton.cdiv(n, cfg["BLOCK"]),)
    return kernel[grid](x, t["b"], t["y"], n, x.shape[1], BLOCK=cfg["BLOCK"], EVEN=cfg["EVEN"],
                        HINT=cfg["HINT"], num_warps=cfg["num_warps"])


def result(t):
    return t["y"]


def reference(t):
    return torch.nn.functional.gelu(t["x"].double() + t["b"].double())
