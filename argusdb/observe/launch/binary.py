"""What identifies a compiled Triton binary, as the launch hooks record it.

Pure functions of a ``CompiledKernel`` (its hash, metadata and argument specialization) and of
the records the hooks write (:func:`binary_matches` for ``--option``), shared by the hooks
(:mod:`argusdb.observe.launch.hooks`), the replay worker and the command backend.

Example:
    >>> binary_field({"constexprs": {"BLOCK": 1024}}, "constexpr.BLOCK")
    1024
"""

from __future__ import annotations

import sys
from typing import Any


def capturing() -> bool:
    """Whether torch's current CUDA stream (the one Triton launches on) is capturing a graph."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available()
                    and torch.cuda.is_current_stream_capturing())
    except Exception:  # a torch without CUDA or an uninitialized context: nothing captured
        return False


def binary_hash(kernel: Any) -> str:
    """The compiled binary's hash; ``interpreter`` under TRITON_INTERPRET (no binary)."""
    if kernel is None:
        return "interpreter"
    if hasattr(kernel, "result") and not hasattr(kernel, "hash"):
        kernel = kernel.result()
    return str(getattr(kernel, "hash", "unknown"))


def binary_info(jit: Any, kernel: Any, args: tuple[Any, ...], kw: dict[str, Any],
                constexprs: dict[str, Any] | None) -> dict[str, Any]:
    """num_warps, num_stages, target, shared memory, constexprs and argument specialization
    (:func:`specialization`) of one binary."""
    md = getattr(kernel, "metadata", None)
    if constexprs is None:  # not compiled in this process by the hook (interpreter)
        names = list(getattr(jit, "arg_names", []))
        values = dict(zip(names, args, strict=False)) | kw
        fn = getattr(jit, "fn", None)
        ann = getattr(fn, "__annotations__", {})
        constexprs = {k: _plain(values[k]) for k in names
                      if k in values and "constexpr" in str(ann.get(k, ""))}
    target = getattr(md, "target", None)
    return {"hash": binary_hash(kernel), "name": getattr(md, "name", None),
            "args": specialization(kernel),
            "num_warps": getattr(md, "num_warps", kw.get("num_warps")),
            "num_stages": getattr(md, "num_stages", kw.get("num_stages")),
            "num_ctas": getattr(md, "num_ctas", None), "shared": getattr(md, "shared", None),
            "target": (f"sm_{target.arch}" if target is not None and target.backend == "cuda"
                       else str(target) if target is not None else "interpreter"),
            "constexprs": constexprs}


def specialization(kernel: Any) -> dict[str, str]:
    """How the binary's JIT specialized each runtime argument: its type, and ``:div16`` where
    Triton assumed it divisible by 16 (``{"x_ptr": "*fp16:div16", "n_cols": "i32"}``), from the
    compiled kernel's source (``CompiledKernel.src``: its signature and ``tt.divisibility``
    attributes). Launches with other dtypes, or with lengths or pointers that are not multiples
    of 16, compile other binaries with the same constexprs and warps; this tells them apart.
    Empty without a compiled kernel (the interpreter)."""
    src = getattr(kernel, "src", None)
    sig = getattr(src, "signature", None)
    if not isinstance(sig, dict):
        return {}
    attrs = getattr(src, "attrs", None) or {}
    out: dict[str, str] = {}
    for i, (name, ty) in enumerate(sig.items()):
        if ty == "constexpr":
            continue
        div = [v for key, v in attrs.get((i,), []) if key == "tt.divisibility"]
        out[str(name)] = f"{ty}" + (f":div{div[0]}" if div else "")
    return out


def interpreter_key(info: dict[str, Any]) -> str:
    """The stand-in hash of a launch under ``TRITON_INTERPRET`` (no binary): ``interpreter``
    with its constexprs and num_warps, so launches that would compile to different binaries
    on a GPU stay apart here too."""
    parts = [f"{k}={v}" for k, v in sorted((info.get("constexprs") or {}).items())]
    if info.get("num_warps") is not None:
        parts.append(f"num_warps={info['num_warps']}")
    return "interpreter" + (":" + ",".join(parts) if parts else "")


def binary_matches(info: dict[str, Any], select: dict[str, str]) -> bool:
    """Whether a binary (:func:`binary_info`) has every ``select`` value: ``num_warps``,
    ``num_stages``, ``constexpr.NAME``, ``arg.NAME`` (its specialization, e.g. ``i32:div16``)
    compared as text, ``binary`` as a hash prefix."""
    for key, want in select.items():
        if key == "binary":
            got_ok = str(info.get("hash", "")).startswith(str(want))
        else:
            got = binary_field(info, key)
            got_ok = got is not None and str(got) == str(want)
        if not got_ok:
            return False
    return True


def binary_field(info: dict[str, Any], key: str) -> Any:
    """A binary's value for an ``--option`` key: ``num_warps``, ``num_stages``,
    ``constexpr.NAME`` (its constexprs) or ``arg.NAME`` (its argument specialization); None
    where it has none."""
    if key.startswith(("constexpr.", "arg.")):
        field, name = key.split(".", 1)
        return (info.get("constexprs" if field == "constexpr" else "args") or {}).get(name)
    return info.get(key)


def _plain(v: Any) -> Any:
    v = getattr(v, "value", v)
    return v if isinstance(v, int | float | str | bool) or v is None else str(v)


def predict_binary(jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The hash of the binary a launch of ``jit`` with these arguments will run, before it
    runs: Triton's own cache lookup (``JITFunction.run``'s binder and cache key). None when
    the binary is not compiled yet, or under the interpreter (no binaries)."""
    try:
        from triton import knobs
        from triton.runtime.driver import driver
        from triton.runtime.jit import compute_cache_key

        device = driver.active.get_current_device()
        kernel_cache, key_cache, _target, _backend, binder = jit.device_caches[device]
        kw = dict(kwargs)
        kw["debug"] = kw.get("debug", jit.debug) or knobs.runtime.debug
        kw["instrumentation_mode"] = knobs.compilation.instrumentation_mode
        _bound, specialization, options = binder(*args, **kw)
        kernel = kernel_cache.get(compute_cache_key(key_cache, specialization, options))
    except Exception:  # another Triton, the interpreter: copy every launch until counted
        return None
    return None if kernel is None else binary_hash(kernel)
