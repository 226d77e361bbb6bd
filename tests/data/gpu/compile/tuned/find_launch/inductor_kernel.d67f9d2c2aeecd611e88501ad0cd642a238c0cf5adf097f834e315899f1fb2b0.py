

import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.user_autotune(
    configs=[{'BLOCK': 1024, 'num_warps': 4, 'num_stages': 3}, {'BLOCK': 2048, 'num_warps': 8, 'num_stages': 3}, {'BLOCK': 4096, 'num_warps': 8, 'num_stages': 3}],
    inductor_meta={'grid_type': 'PrecomputedGrid', 'precomputed_grids': [{'config': {'BLOCK': 1024, 'num_warps': 4, 'num_stages': 3}, 'python': ['16384', '1', '1'], 'cpp': ['16384L', '1L', '1L'], 'python_slow': ['16384', '1', '1']}, {'config': {'BLOCK': 2048, 'num_warps': 8, 'num_stages': 3}, 'python': ['8192', '1', '1'], 'cpp': ['8192L', '1L', '1L'], 'python_slow': ['8192', '1', '1']}, {'config': {'BLOCK': 4096, 'num_warps': 8, 'num_stages': 3}, 'python': ['4096', '1', '1'], 'cpp': ['4096L', '1L', '1L'], 'python_slow': ['4096', '1', '1']}], 'extra_launcher_args': [], 'kernel_name': 'gelu_tuned_kernel_0', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False},
    triton_meta={'signature': {'x_ptr': '*fp16', 'y_ptr': '*fp16', 'n': 'i32', 'BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    filename=__file__,
    custom_kernel=True,
)
@triton.jit
def gelu_tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # region load
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # region math
    inner = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    y = x * tl.sigmoid(inner)
    # region store
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
