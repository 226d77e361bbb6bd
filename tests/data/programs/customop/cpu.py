"""The custom op's eager loop on the CPU (TRITON_INTERPRET=1): y = x * 0.5 + b, a few steps."""
import sys

import torch

from scale_add import scale_add


def main(steps: int) -> None:
    torch.manual_seed(0)
    x, b = torch.randn(3000), torch.randn(3000)
    for _ in range(steps):
        y = scale_add(x, b, 0.5)
    assert torch.allclose(y, x * 0.5 + b)
    print("customop ok")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
