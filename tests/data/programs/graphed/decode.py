"""A decode step captured in a CUDA graph and replayed, as serving loops run it.

Warm-up launches on a side stream, one capture, then replays: after the capture the Triton
kernel runs only as a node of the graph (no Python launch per step).
"""
import torch

from swiglu import swiglu


def main() -> None:
    torch.manual_seed(0)
    rows, n = 256, 4096
    x = torch.randn(rows, 2 * n, device="cuda", dtype=torch.float16)
    w = torch.randn(n, n, device="cuda", dtype=torch.float16) / 64
    h = torch.empty(rows, n, device="cuda", dtype=torch.float16)
    out = torch.empty(rows, n, device="cuda", dtype=torch.float16)

    def step() -> None:
        swiglu(x, h)
        torch.matmul(h, w, out=out)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _ in range(40):
        graph.replay()
    torch.cuda.synchronize()
    ref = torch.nn.functional.silu(x[:, :n].float()) * x[:, n:].float()
    err = (h.float() - ref).abs().max().item()
    assert err < 1e-2, err
    print(f"decode ok, max err {err:.2e}, out mean {out.float().abs().mean().item():.4f}")


if __name__ == "__main__":
    main()
