"""Two request streams served side by side: each step normalizes one batch on a side stream
while a projection of the previous batch runs on another, joined by events.

    python3 serve.py --rows 2048 --steps 12
"""
import argparse

import torch

from rmsnorm import rmsnorm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    w = torch.rand(args.cols, device=dev, dtype=torch.float16) + 0.5
    proj = torch.randn(args.cols, args.cols, device=dev, dtype=torch.float16) / 64
    norm_stream, proj_stream = torch.cuda.Stream(), torch.cuda.Stream()
    prev = torch.randn(args.rows, args.cols, device=dev, dtype=torch.float16)
    out = None
    for _ in range(args.steps):
        x = torch.randn(args.rows, args.cols, device=dev, dtype=torch.float16)
        ready = torch.cuda.Event()
        ready.record()
        norm_stream.wait_event(ready)
        proj_stream.wait_event(ready)
        with torch.cuda.stream(norm_stream):
            y = rmsnorm(x, w)
        with torch.cuda.stream(proj_stream):
            out = prev @ proj
        torch.cuda.current_stream().wait_stream(norm_stream)
        torch.cuda.current_stream().wait_stream(proj_stream)
        prev = y
    torch.cuda.synchronize()
    ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    err = (y.float() - ref).abs().max().item()
    assert err < 2e-2, err
    assert out is not None
    print(f"served {args.steps} steps, max err {err:.2e}")


if __name__ == "__main__":
    main()
