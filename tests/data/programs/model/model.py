"""A few transformer-style blocks whose LayerNorm is a Triton kernel (fused_norm.py)."""
import argparse

import torch

from fused_norm import layer_norm


class Block(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(dim))
        self.b = torch.nn.Parameter(torch.zeros(dim))
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = layer_norm(x, self.w, self.b)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(h)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(a.dim) for _ in range(a.blocks)]).to(device)
    x = torch.randn(a.tokens, a.dim, device=device)
    with torch.no_grad():
        for _ in range(a.steps):
            y = model(x)
        ref = torch.nn.functional.layer_norm(x, (a.dim,), model[0].w, model[0].b)
        err = ((layer_norm(x, model[0].w, model[0].b) - ref).norm() / ref.norm()).item()
    print(f"output norm {y.norm().item():.4g}, layer norm rel err {err:.2e}")


if __name__ == "__main__":
    main()
