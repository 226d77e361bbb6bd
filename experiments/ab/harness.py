"""The benchmark's kernels as a search space: loading, moves, launching, compiling, checking.

A kernel module of ``experiments/ab/kernels/`` declares ``KERNEL`` (the @triton.jit function),
``SPACE`` (knob -> ordered values), ``BASE`` (the starting configuration), ``LOAD_REGION`` (or
``load_region(cfg)``), ``TOL``, ``SHAPES`` (``full`` for the H200, ``tiny`` for the
interpreter) and ``setup`` / ``launch`` / ``result`` / ``reference``. ``launch`` raises
ValueError for a configuration the shape cannot take (an infeasible move costs nothing).

A move changes one knob by one step along its ordered values; a knob is a compile option
(``num_warps``, ``num_stages``), a tile size, or a source transform written as a constexpr
branch (``EVEN``/``EVEN_K``: bounds masks off; ``HINT``: contiguity hints for wide loads;
``ONLINE``: two loops fused into one; ``STAGES``: software pipelining of a ``tl.range`` loop,
1 = off). Each distinct configuration is a different compiled program.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
NAMES = ("softmax", "layernorm", "gelu_bias", "matmul", "linear_epilogue", "attention",
         "logsumexp", "transpose")

#: What kind of change a knob makes; the evidence arm's rules weight moves by category.
CATEGORY = {"num_stages": "stages", "STAGES": "stages", "BLOCK": "tile", "BLOCK_M": "tile",
            "BLOCK_N": "tile", "BLOCK_K": "tile", "ROWS": "tile", "num_warps": "warps",
            "EVEN": "mask", "EVEN_K": "mask", "HINT": "vector", "ONLINE": "schedule",
            "GROUP_M": "schedule"}
#: Launch options (not kernel arguments).
OPTIONS = ("num_warps", "num_stages")

Config = dict[str, int]


def load(name: str, path: Path | None = None) -> ModuleType:
    """Import ``experiments/ab/kernels/<name>.py`` (or ``path``) under a unique module name."""
    path = path or KERNELS_DIR / f"{name}.py"
    modname = f"_ab_{name}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod


def key(cfg: Config) -> str:
    """A configuration as text, knobs in order: ``BLOCK=256,num_warps=4``."""
    return ",".join(f"{k}={cfg[k]}" for k in sorted(cfg))


def load_region(mod: ModuleType, cfg: Config) -> str:
    """Name of the region whose loads the exposed-latency probe forces."""
    fn = getattr(mod, "load_region", None)
    return str(fn(cfg)) if fn is not None else str(mod.LOAD_REGION)


@dataclass(frozen=True)
class Move:
    """One knob changed by one step (``new`` the configuration it makes)."""

    knob: str
    old: int
    value: int
    new: tuple[tuple[str, int], ...]

    @property
    def category(self) -> str:
        return CATEGORY.get(self.knob, "other")

    @property
    def name(self) -> str:
        if self.knob == "jump":
            return "jump:" + key(self.cfg())
        return f"{self.knob}:{self.old}->{self.value}"

    def cfg(self) -> Config:
        return dict(self.new)


def moves(space: dict[str, list[int]], cfg: Config) -> list[Move]:
    """Every one-step move from ``cfg``, in a fixed order (knobs sorted, down before up)."""
    out = []
    for knob in sorted(space):
        vals = space[knob]
        i = vals.index(cfg[knob])
        for j in (i - 1, i + 1):
            if 0 <= j < len(vals):
                new = dict(cfg)
                new[knob] = vals[j]
                out.append(Move(knob, cfg[knob], vals[j], tuple(sorted(new.items()))))
    return out


def jump(cfg: Config, new: Config) -> Move:
    """A restart move to an arbitrary configuration (when no one-step move is left)."""
    return Move("jump", 0, 0, tuple(sorted(new.items())))


class Recorder:
    """Stands in for a @triton.jit function in ``launch``: records grid, args and kwargs."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.grid: Any = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}

    def __getitem__(self, grid: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> None:
            self.grid, self.args, self.kwargs = grid, args, kwargs
        return call


@dataclass
class Launch:
    """A kernel launch bound to its arguments: compile once, launch many times."""

    fn: Any
    grid: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def __call__(self) -> Any:
        return self.fn[self.grid](*self.args, **self.kwargs)

    def compile(self) -> Any:
        """Compile without launching (the JIT's own specialization); the compiled kernel."""
        return self.fn.warmup(*self.args, grid=self.grid, **self.kwargs)


def bind(mod: ModuleType, tensors: dict[str, Any], cfg: Config) -> Launch:
    """The launch ``mod.launch`` would make for ``cfg`` (ValueError when infeasible)."""
    fn = getattr(mod, mod.KERNEL)
    rec = Recorder(fn)
    mod.launch(rec, tensors, cfg)
    return Launch(fn, rec.grid, rec.args, rec.kwargs)


def rel_err(mod: ModuleType, tensors: dict[str, Any]) -> float:
    """Relative L2 error of the kernel's output against its fp64 torch reference."""
    out = mod.result(tensors).double()
    ref = mod.reference(tensors)
    return float(((out - ref).norm() / ref.norm()).item())


_DTYPES = {"torch.float16": "fp16", "torch.float32": "fp32", "torch.bfloat16": "bf16",
           "torch.int32": "i32", "torch.int64": "i64"}


def compile_sm90(launch: Launch) -> Any:
    """Compile a bound launch for sm_90 with Triton's own toolchain, without a GPU (the CPU
    dry mode's static evidence). Pointer and scalar types follow the arguments; the JIT's
    divisibility specializations are not applied, so the SASS can differ from a launched
    binary's in address arithmetic."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    fn = launch.fn if isinstance(launch.fn, JITFunction) else JITFunction(launch.fn.fn)
    names = [p.name for p in fn.params]
    values = dict(zip(names, launch.args, strict=False))
    values.update({k: v for k, v in launch.kwargs.items() if k in names})
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for p in fn.params:
        v = values[p.name]
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            constexprs[p.name] = v
        elif hasattr(v, "dtype") and hasattr(v, "data_ptr"):
            signature[p.name] = "*" + _DTYPES[str(v.dtype)]
        elif isinstance(v, float):
            signature[p.name] = "fp32"
        else:
            signature[p.name] = "i32" if -2 ** 31 <= int(v) < 2 ** 31 else "i64"
    options = {k: launch.kwargs[k] for k in OPTIONS if k in launch.kwargs}
    return triton.compile(ASTSource(fn, signature=signature, constexprs=constexprs),
                          target=GPUTarget("cuda", 90, 32), options=options)
