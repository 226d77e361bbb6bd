"""Forward passes of a two-width MLP in bf16; its RMSNorm runs at two widths (two binaries)."""
import sys

import torch

from mlp.ops import rms_norm


class Layer(torch.nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(dim))
        self.up = torch.nn.Linear(dim, hidden)
        self.down = torch.nn.Linear(hidden, dim)
        self.w2 = torch.nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.silu(self.up(rms_norm(x, self.w)))
        return x + self.down(rms_norm(h, self.w2))


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    net = torch.nn.Sequential(*[Layer(1024, 3072) for _ in range(2)]).to(device, dtype)
    x = torch.randn(rows, 1024, device=device, dtype=dtype)
    with torch.no_grad():
        for _ in range(steps):
            y = net(x)
        w = net[0].w
        ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
        err = ((rms_norm(x, w).float() - ref).norm() / ref.norm()).item()
    print(f"output norm {y.float().norm().item():.4g}, rms rel err {err:.2e}")


if __name__ == "__main__":
    main()
