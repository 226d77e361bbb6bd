"""fp16 GEMM with a Triton kernel, repeated, checked against torch.matmul."""
import torch

from matmul_loop import matmul

n = 4096 if torch.cuda.is_available() else 128
device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.float16 if device == "cuda" else torch.float32
a = torch.randn(n, n, device=device, dtype=dtype)
b = torch.randn(n, n, device=device, dtype=dtype)
for _ in range(12):
    c = matmul(a, b)
ref = a.float() @ b.float()
print(f"gemm rel err {((c.float() - ref).norm() / ref.norm()).item():.2e}")
