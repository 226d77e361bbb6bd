"""An MLP block step under torch.compile whose activation is the user's Triton GELU.

Inductor fuses the layer norm and the residual add into kernels of its own and launches the
user's kernel from its copy of gelu.py; TORCHDYNAMO_DISABLE=1 runs the same step eagerly.
"""
import torch
import torch.nn.functional as F

from gelu import gelu


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = gelu(self.fc1(self.norm(x)))
        return x + self.fc2(h)


@torch.compile
def mlp_step(block: Block, x: torch.Tensor) -> torch.Tensor:
    return block(x)


def main() -> None:
    torch.manual_seed(0)
    block = Block(1024).cuda().half()
    x = torch.randn(4096, 1024, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        for _ in range(20):
            y = mlp_step(block, x)
        torch.cuda.synchronize()
        h = F.gelu(block.fc1(block.norm(x)).float(), approximate="tanh").half()
        ref = x + block.fc2(h)
    err = (y - ref).abs().max().item()
    assert err < 5e-2, err
    print(f"mlp ok (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
