"""LayerNorm forward over (rows, cols) fp16 rows, fp32 statistics: a row op whose two
reductions (``tl.sum`` in ``mean`` and in ``var``) are the same library code.

Adapted from the Triton tutorial "Layer Normalization" (05-layer-norm.py, forward kernel),
with the whole row in registers and ROWS rows per program.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride, eps,
                  BLOCK: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    col_ok = cols < n_cols
    if EVEN:
        w = tl.load(w_ptr + cols).to(tl.float32)
        b = tl.load(b_ptr + cols).to(tl.float32)
    else:
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    for r in range(0, ROWS):
        row = pid * ROWS + r
        # region load
        if EVEN:
            x = tl.load(x_ptr + row * stride + cols).to(tl.float32)
        else:
            x = tl.load(x_ptr + row * stride + cols, mask=col_ok & (row < n_rows),
                        other=0.0).to(tl.float32)
        # region mean
        mean = tl.sum(x, 0) / n_cols
        xc = tl.where(col_ok, x - mean, 0.0)
        # region var
        var = tl.sum(xc * xc, 0) / n_cols
        rstd = 1.0 / tl.sqrt(var + eps)
        # region store
        y = (xc * rstd * w + b).to(tl.float16)
        if EVEN:
            tl.store(y_ptr + row * stride + cols, y)
        else:
            tl.store(y_ptr + row * stride + cols, y, mask=col_ok & (row < n_rows))


KERNEL = "layernorm_fwd"
LOAD_REGION = "load"
SPACE = {"ROWS": [1, 2, 4, 8], "EVEN": [0, 1], "num_warps": [1, 2, 4, 8, 16]}
BASE = {"ROWS": 1, "EVEN": 0, "num_warps": 2}
TOL = 2e-3
SHAPES = {"full": (32768, 4096), "tiny": (4, 32)}


def setup(size, device, seed=0):
    rows, cols = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, cols, generator=g).half().to(device)
    w = torch.rand(cols, generator=g).half().to(device)
    b = torch.randn(cols, generator=g).half().to(device)
    return {"x": x, "w": w, "b": b, "y": torch.empty_like(x)}


def launch(kernel, t, cfg):
    x = t["x"]
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    if cfg["EVEN"] and (block != cols or rows % cfg["ROWS"]):
        raise ValueError("EVEN needs cols a power of two and rows a multiple of ROWS")
    grid = (triton.cdiv(rows, cfg["ROWS"]),)
    return kernel[grid](x, t["w"], t["b"], t["y"], rows, cols, x.stride(0), 1e-5, BLOCK=block,
                        ROWS=cfg["ROWS"], EVEN=cfg["EVEN"], num_warps=cfg["num_warps"])


def result(t):
    return t["y"]


def reference(t):
    x = t["x"].double()
    return torch.nn.functional.layer_norm(x, x.shape[-1:], t["w"].double(), t["b"].double(),
                                          1e-5)
