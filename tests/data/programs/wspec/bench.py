"""A 4096^3 fp16 GEMM with a warp-specialized K loop, ten times, checked against torch."""
import torch

from matmul_ws import matmul

torch.manual_seed(0)
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
for _ in range(10):
    c = matmul(a, b)
ref = a.float() @ b.float()
err = ((c.float() - ref).norm() / ref.norm()).item()
assert err < 1e-2, err
print(f"matmul rel err {err:.2e}")
