"""A few training steps of an MLP whose activation is gelu_op.Gelu (backward on autograd's thread)."""
import torch

from gelu_op import Gelu


def main() -> None:
    torch.manual_seed(0)
    lin1 = torch.nn.Linear(1024, 4096).cuda()
    lin2 = torch.nn.Linear(4096, 1024).cuda()
    opt = torch.optim.SGD([*lin1.parameters(), *lin2.parameters()], lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    for _ in range(10):
        opt.zero_grad()
        h = lin1(x)
        h.retain_grad()
        loss = lin2(Gelu.apply(h)).square().mean()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    hr = h.detach().requires_grad_()
    lin2(torch.nn.functional.gelu(hr, approximate="tanh")).square().mean().backward()
    assert torch.allclose(h.grad, hr.grad, rtol=1e-3, atol=1e-6), (h.grad - hr.grad).abs().max()
    print("train ok")


if __name__ == "__main__":
    main()
