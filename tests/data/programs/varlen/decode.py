"""Attention-score softmax of a decode loop whose context grows each step (1000 to 2048 keys)."""
import torch

from softmax_var import softmax

torch.manual_seed(0)
lengths = [1000, 1024, 1500, 2000, 2048] * 4
for n in lengths:
    x = torch.randn(4096, n, device="cuda", dtype=torch.float16)
    y = softmax(x)
    ref = torch.softmax(x.float(), -1)
    assert (y - ref).abs().max().item() < 1e-5, n
print(f"decoded {len(lengths)} steps, last length {lengths[-1]}")
