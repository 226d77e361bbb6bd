"""Steps of an in-place AXPY on two halves of one buffer: y += 0.5 * x, x = buf[:n], y = buf[n:]."""
import argparse
import time

import torch

from axpy_ops import axpy_

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=128)
ap.add_argument("--steps", type=int, default=8)
ap.add_argument("--block", type=int, default=64)
ap.add_argument("--seconds", type=float, default=0.0, help="keep stepping for this long")
a = ap.parse_args()
dev = "cuda" if torch.cuda.is_available() else "cpu"
buf = torch.arange(2 * a.n, dtype=torch.float32, device=dev)
x, y = buf[:a.n], buf[a.n:]
y0 = y.clone()
steps = 0
t0 = time.monotonic()
while steps < a.steps or time.monotonic() - t0 < a.seconds:
    axpy_(x, y, 0.5, a.block)
    steps += 1
if a.seconds:  # a long run: float32 sums of millions of steps drift from the closed form
    assert bool(torch.isfinite(y).all())
else:
    expect = y0 + steps * 0.5 * x
    assert torch.allclose(y, expect), (y - expect).abs().max()
print(f"{steps} steps, y[0] = {float(y[0])}")
