"""Row softmax kernel, used as a small, memory-bound measurement subject."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_fwd(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    # region reduce
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    d = tl.sum(e, 0)
    # region store
    tl.store(y_ptr + row * stride + cols, e / d, mask=mask)


# Harness used by gpu/record.py (same contract in every kernel module of gpu/kernels):
# setup() makes inputs, launch() runs the kernel once, result()/reference() give the output and
# an fp64 torch reference for the relative-error check.
KERNEL = "softmax_fwd"
CONFIGS = {"default": {"num_warps": 4}}


def setup(rows=16384, cols=1024, device="cuda", seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, device=device, dtype=torch.float32, generator=g)
    return {"x": x, "y": torch.empty_like(x)}


def launch(t, num_warps=4, num_stages=None):
    x, y = t["x"], t["y"]
    rows, cols = x.shape
    kw = {} if num_stages is None else {"num_stages": num_stages}
    return softmax_fwd[(rows,)](x, y, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols),
                                num_warps=num_warps, **kw)


def result(t):
    return t["y"]


def reference(t):
    return torch.softmax(t["x"].double(), -1)


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def run(rows=16384, cols=1024, iters=5, device="cuda"):
    t = setup(rows, cols, device)
    compiled = None
    for _ in range(iters):
        compiled = launch(t)
    if device == "cuda":
        torch.cuda.synchronize()
    return compiled, rel_err(result(t), reference(t))
