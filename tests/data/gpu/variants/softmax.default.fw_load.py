"""Row softmax kernel, used as a small, memory-bound measurement subject."""
import torch
import triton
import triton.language as tl

import os as _argus_os
import triton as _argus_triton
import triton.language as _argus_tl

_ARGUS_INTERPRET = _argus_tl.constexpr(_argus_os.environ.get("TRITON_INTERPRET", "0") == "1")
_ARGUS_SHFL_SELF = _argus_tl.constexpr(
    "{.reg .u32 l; mov.u32 l, %laneid; shfl.sync.idx.b32 $0, $1, l, 0x1f, -1;}")


@_argus_triton.jit
def _argus_forced_wait(x):
    # argusdb forced wait: a shuffle to the own lane reads x, so the warp waits for its load here.
    if _ARGUS_INTERPRET:
        y = x
    elif x.dtype.primitive_bitwidth == 16:
        y = _argus_tl.inline_asm_elementwise(_ARGUS_SHFL_SELF, "=r,r", [x], dtype=x.dtype,
                                             is_pure=False, pack=2)
    else:
        y = _argus_tl.inline_asm_elementwise(_ARGUS_SHFL_SELF, "=r,r", [x], dtype=x.dtype,
                                             is_pure=False, pack=1)
    return y


@triton.jit
def softmax_fwd(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # region load
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    x = _argus_forced_wait(x)  # argusdb: forced wait
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
