"""A small model compiled with torch.compile whose forward calls a custom Triton op."""
import torch

from scale_add import scale_add


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.bias = torch.nn.Parameter(torch.randn(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.lin(x))
        return scale_add(h, self.bias.expand_as(h).contiguous(), 0.5)


def main() -> None:
    torch.manual_seed(0)
    block = Block(2048).cuda()
    model = torch.compile(block)
    x = torch.randn(512, 2048, device="cuda")
    with torch.no_grad():
        for _ in range(12):
            y = model(x)
        torch.cuda.synchronize()
        ref = torch.relu(block.lin(x)) * 0.5 + block.bias
    assert (y - ref).abs().max().item() < 1e-4
    print("compiled ok")


if __name__ == "__main__":
    main()
