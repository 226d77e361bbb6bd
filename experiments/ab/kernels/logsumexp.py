"""Row logsumexp of long fp32 rows: a loop over column blocks with library reductions
(``tl.max``, ``tl.sum``). ONLINE=0 splits it into two loops (max, then sum of exponentials:
two passes over memory); ONLINE=1 fuses them into one loop with a running rescale.

Written for this benchmark.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def logsumexp_rows(x_ptr, out_ptr, n_cols: tl.constexpr, stride, BLOCK: tl.constexpr, ONLINE: tl.constexpr,
                   STAGES: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    cols = tl.arange(0, BLOCK)
    if ONLINE:
        m = tl.full((BLOCK,), float("-inf"), tl.float32)
        s = tl.zeros((BLOCK,), tl.float32)
        for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES):
            # region load
            x = tl.load(base + start + cols, mask=start + cols < n_cols, other=float("-inf"))
            # region reduce
            m_new = tl.maximum(m, x)
            s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
            s = tl.where(m_new == float("-inf"), 0.0, s)
            m = m_new
        mx = tl.max(m, 0)
        total = tl.sum(s * tl.exp(m - mx), 0)
    else:
        m = tl.full((BLOCK,), float("-inf"), tl.float32)
        for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES):
            # region load_max
            x = tl.load(base + start + cols, mask=start + cols < n_cols, other=float("-inf"))
            # region max
            m = tl.maximum(m, x)
        mx = tl.max(m, 0)
        s = tl.zeros((BLOCK,), tl.float32)
        for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES):
            # region load_sum
            x2 = tl.load(base + start + cols, mask=start + cols < n_cols, other=float("-inf"))
            # region sum
            s += tl.exp(x2 - mx)
        total = tl.sum(s, 0)
    # region store
    tl.store(out_ptr + row, mx + tl.log(total))


KERNEL = "logsumexp_rows"
LOAD_REGION = "load_max"
SPACE = {"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "ONLINE": [0, 1], "STAGES": [1, 2, 3, 4],
         "num_warps": [1, 2, 4, 8, 16]}
BASE = {"BLOCK": 512, "ONLINE": 0, "STAGES": 1, "num_warps": 4}
TOL = 1e-5
SHAPES = {"full": (4096, 32768), "tiny": (3, 200)}


def load_region(cfg):
    return "load" if cfg["ONLINE"] else "load_max"


def setup(size, device, seed=0):
    rows, cols = SHAPES[size]
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, cols, generator=g).to(device)
    return {"x": x, "out": torch.empty(rows, device=device)}


def launch(kernel, t, cfg):
    x = t["x"]
    rows, cols = x.shape
    return kernel[(rows,)](x, t["out"], cols, x.stride(0), BLOCK=cfg["BLOCK"],
                           ONLINE=cfg["ONLINE"], STAGES=cfg["STAGES"], num_warps=cfg["num_warps"])


def result(t):
    return t["out"]


def reference(t):
    return torch.logsumexp(t["x"].double(), -1)
