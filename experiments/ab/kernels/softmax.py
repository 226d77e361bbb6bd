"""Row softmax over a (rows, cols) fp32 matrix, several rows per program: memory-bound row op.

Adapted from the Triton tutorial "Fused Softmax" (02-fused-softmax.py): one row per loop
iteration, the whole row in registers; here each program walks ROWS consecutive rows in a
``tl.range`` loop (software-pipelined when num_stages > 1).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr, ROWS: tl.constexpr,
                 STAGES: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    col_ok = cols < n_cols
    for r in tl.range(0, ROWS, num_stages=STAGES):
        row = pid * ROWS + r
        ok = col_ok & (row < n_rows)
        # region load
        x = tl.load(x_ptr + row * stride + cols, mask=ok, other=float("-inf"))
        # region reduce
        x = x - tl.max(x, 0)
        e = tl.exp(x)
        d = tl.sum(e, 0)
        # region store
        tl.store(y_ptr + row * stride + cols, e / d, mask=ok)


KERNEL = "softmax_rows"
LOAD_REGION = "load"
SPACE = {"ROWS": [1, 2, 4, 8, 16], "STAGES": [1, 2, 3, 4], "num_warps": [1, 2, 4, 8, 16]}
BASE = {"ROWS": 1, "STAGES": 1, "num_warps": 4}
TOL = 1e-5
SHAPES = {"full": (32768, 2048), "tiny": (6, 40)}


def setup(size, device, seed=0):
    rows, cols = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, cols, generator=g).to(device)
    return {"x": x, "y": torch.empty_like(x)}


def launch(kernel, t, cfg):
    x, y = t["x"], t["y"]
    rows, cols = x.shape
    grid = (triton.cdiv(rows, cfg["ROWS"]),)
    return kernel[grid](x, y, rows, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols),
                        ROWS=cfg["ROWS"], STAGES=cfg["STAGES"], num_warps=cfg["num_warps"])


def result(t):
    return t["y"]


def reference(t):
    return torch.softmax(t["x"].double(), -1)
