"""A tensor-parallel MLP on N ranks with no step marker: an ordinary ``torchrun`` program.

Each rank holds a column shard of W1 (with its bias) and a row shard of W2. An iteration
computes ``gelu(x @ W1 + b1)`` on its shard (the Triton kernel of ``fused.py``), multiplies by
its W2 shard and all-reduces the partial output; the first quarter of the rows is all-reduced
asynchronously while the other three quarters are computed, so part of the communication can hide
behind compute. It calls no ``torch.profiler.record_function``: nothing tells a profiler where
an iteration starts.

Runs on CUDA with NCCL, or on CPU with gloo (``TRITON_INTERPRET=1`` runs the Triton kernel).

    torchrun --nproc-per-node 1 --standalone mlp.py --iters 12
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from fused import bias_gelu_


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--ffn", type=int, default=4096)
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(dev)
    dtype = torch.bfloat16 if cuda else torch.float32
    g = torch.Generator().manual_seed(rank)
    shard = a.ffn // world
    w1 = (torch.randn(a.hidden, shard, generator=g) / a.hidden ** 0.5).to(dev, dtype)
    b1 = torch.randn(shard, generator=g).to(dev, dtype)
    w2 = (torch.randn(shard, a.hidden, generator=g) / shard ** 0.5).to(dev, dtype)
    x = torch.randn(a.tokens, a.hidden, generator=g).to(dev, dtype)
    part = a.tokens // 4  # the async all-reduce of the first quarter hides behind the rest
    for _ in range(a.iters):
        top = bias_gelu_(x[:part] @ w1, b1) @ w2
        work = dist.all_reduce(top, async_op=True)  # overlaps the other rows's compute
        bottom = bias_gelu_(x[part:] @ w1, b1) @ w2
        dist.all_reduce(bottom)
        work.wait()
        x = torch.cat([top, bottom]) * 0.5 + x * 0.5
    if cuda:
        torch.cuda.synchronize()
    print(f"rank {rank}/{world}: checksum {float(x.float().abs().mean()):.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
