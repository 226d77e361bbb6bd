"""Block sizes for the layer-norm kernel (a sibling module the kernel module imports)."""
import triton


def block_for(cols: int) -> int:
    return triton.next_power_of_2(cols)


NUM_WARPS = 4
