"""Helpers for the transform tests: load kernel modules from text, compile for sm_90 on a CPU."""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "argusdb" / "demo" / "kernels"

# Triton signatures of the three kernels, as the JIT would specialize their launches in
# argusdb/demo/kernels (pointer dtypes, 32-bit ints), and the constexprs/options of the default
# versions.
SIGNATURES: dict[str, tuple[str, dict[str, str], dict[str, Any], dict[str, int]]] = {
    "softmax": ("softmax_fwd", {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32",
                                "stride": "i32", "BLOCK": "constexpr"},
                {"BLOCK": 1024}, {"num_warps": 4}),
    "matmul": ("matmul_kernel", {**{n: "*fp16" for n in ("a_ptr", "b_ptr", "c_ptr")},
                                 **{n: "i32" for n in "M N K sam sak sbk sbn scm scn".split()},
                                 "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
               {"BM": 128, "BN": 128, "BK": 64}, {"num_warps": 8, "num_stages": 3}),
    "attention": ("attn_fwd", {**{n: "*fp16" for n in ("q_ptr", "k_ptr", "v_ptr", "o_ptr")},
                               "sm_scale": "fp32", "stride_bh": "i32", "stride_m": "i32",
                               "N_CTX": "i32", "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr",
                               "BLOCK_N": "constexpr", "CAUSAL": "constexpr"},
                  {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True},
                  {"num_warps": 8, "num_stages": 3}),
}


@contextlib.contextmanager
def _torch_or_placeholder() -> Iterator[None]:
    """The kernel modules import torch for their harness; compiling a kernel does not need it.

    Where torch is not installed (the test extra has only Triton), an empty placeholder stands
    in while the module is imported, and is removed again right after.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules["torch"] = ModuleType("torch")
        try:
            yield
        finally:
            del sys.modules["torch"]
    else:
        yield


def load(text: str, name: str, tmp: Path) -> ModuleType:
    """Import kernel source text as a module (Triton's JIT needs a real file to read)."""
    path = tmp / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    with _torch_or_placeholder():
        spec.loader.exec_module(mod)
    return mod


def sm90_sass(text: str, program: str, name: str, tmp: Path) -> str:
    """Compile a kernel source for sm_90 with Triton's bundled ptxas; its SASS via nvdisasm."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel, signature, constexprs, options = SIGNATURES[program]
    mod = load(text, name, tmp)
    compiled = triton.compile(ASTSource(getattr(mod, kernel), signature=signature,
                                        constexprs=constexprs),
                              target=GPUTarget("cuda", 90, 32), options=options)
    cubin = tmp / f"{name}.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    return subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True,
                          check=True).stdout

