"""A small decoder-style model compiled whole with torch.compile(model); its feed-forward
activation is the user's autotuned SwiGLU kernel (swiglu.py), which Inductor benchmarks over
its configs when it compiles the model. TORCHDYNAMO_DISABLE=1 runs the same model eagerly.
"""
import torch
import torch.nn.functional as F

from swiglu import swiglu


class FeedForward(torch.nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.norm = torch.nn.RMSNorm(d)
        self.w_gate = torch.nn.Linear(d, hidden, bias=False)
        self.w_up = torch.nn.Linear(d, hidden, bias=False)
        self.w_down = torch.nn.Linear(hidden, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + self.w_down(swiglu(self.w_gate(h), self.w_up(h)))


class Model(torch.nn.Module):
    def __init__(self, d: int = 1024, hidden: int = 2816, layers: int = 2) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(FeedForward(d, hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def reference(model: Model, x: torch.Tensor) -> torch.Tensor:
    for layer in model.layers:
        h = layer.norm(x)
        x = x + layer.w_down((F.silu(layer.w_gate(h).float()) * layer.w_up(h).float()).half())
    return x


def main() -> None:
    torch.manual_seed(0)
    model = Model().cuda().half().eval()
    compiled = torch.compile(model)
    x = torch.randn(2048, 1024, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        for _ in range(10):
            y = compiled(x)
        torch.cuda.synchronize()
        ref = reference(model, x)
    err = (y - ref).abs().max().item()
    assert err < 5e-2, err
    print(f"model ok (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
