"""A tensor-parallel MLP block on N ranks: all-gather the input, Triton bias+GELU, all-reduce.

An ordinary ``torchrun`` program (it knows nothing of argusdb): each rank holds a column shard
of W1 and a row shard of W2; a step all-gathers the sequence-sharded input, computes
``gelu(x @ W1 + b1) @ W2`` on its shard and all-reduces the partial output. It marks its steps
and compute with ``torch.profiler.record_function`` ("step", "mlp"), as programs do.

Versions (``--version``):
- ``serial``: the all-reduce of the whole output follows the whole compute on one stream.
- ``overlap``: the output is computed in ``--chunks`` row chunks; the all-reduce of chunk c runs
  on a communication stream while chunk c+1 is computed.

Runs on CUDA with NCCL, or on CPU with gloo (``TRITON_INTERPRET=1`` runs the Triton kernel).
Writes (or prints) one JSON line per rank: mean step wall time over the measured steps (host
clock around synchronized steps), for the collection-cost comparison.

    torchrun --nproc-per-node 2 tp_block.py --version overlap --steps 50
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, y_ptr, n_cols, n, BLOCK: tl.constexpr):
    # region load
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    # region gelu
    v = x + b
    inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    e = tl.exp(-2.0 * tl.abs(inner))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(inner >= 0, t, -t)
    y = 0.5 * v * (1.0 + t)
    # region store
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def bias_gelu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    bias_gelu_kernel[(triton.cdiv(n, 1024),)](x, b, y, x.shape[-1], n, BLOCK=1024)
    return y


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", choices=("serial", "overlap"), required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=16384)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--result-dir", help="write result.rank<R>.json there (else print it)")
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", 0))
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    dtype = torch.bfloat16 if cuda else torch.float32
    g = torch.Generator(device="cpu").manual_seed(rank)
    shard = a.ffn // world
    w1 = (torch.randn(a.hidden, shard, generator=g) / a.hidden ** 0.5).to(dev, dtype)
    b1 = torch.randn(shard, generator=g).to(dev, dtype)
    w2 = (torch.randn(shard, a.hidden, generator=g) / shard ** 0.5).to(dev, dtype)
    x_shard = torch.randn(a.tokens // world, a.hidden, generator=g).to(dev, dtype)
    x = torch.empty(a.tokens, a.hidden, device=dev, dtype=dtype)
    out = torch.empty(a.tokens, a.hidden, device=dev, dtype=dtype)
    comm = torch.cuda.Stream() if cuda else None
    rows = a.tokens // a.chunks

    def step() -> None:
        with torch.profiler.record_function("step"):
            dist.all_gather_into_tensor(x, x_shard)
            if a.version == "serial" or comm is None:
                with torch.profiler.record_function("mlp"):
                    out.copy_(bias_gelu(x @ w1, b1) @ w2)
                dist.all_reduce(out)
                return
            main_stream = torch.cuda.current_stream()
            for c in range(a.chunks):
                part = out[c * rows:(c + 1) * rows]
                with torch.profiler.record_function("mlp"):
                    part.copy_(bias_gelu(x[c * rows:(c + 1) * rows] @ w1, b1) @ w2)
                comm.wait_stream(main_stream)
                with torch.cuda.stream(comm):
                    dist.all_reduce(part)
            main_stream.wait_stream(comm)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()

    for _ in range(a.warmup):
        step()
    sync()
    t0 = time.perf_counter_ns()
    for _ in range(a.steps):
        step()
    sync()
    wall = time.perf_counter_ns() - t0
    checksum = float(out.float().abs().mean())
    res = json.dumps({"rank": rank, "world_size": world, "version": a.version,
                      "steps": a.steps, "mean_step_ns": wall / a.steps, "checksum": checksum,
                      "mode": os.environ.get("ARGUS_DIST_MODE", "none"), "tokens": a.tokens,
                      "hidden": a.hidden, "ffn": a.ffn, "chunks": a.chunks})
    if a.result_dir:
        os.makedirs(a.result_dir, exist_ok=True)
        with open(os.path.join(a.result_dir, f"result.rank{rank}.json"), "w") as fh:
            fh.write(res + "\n")
    else:
        print(res, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
