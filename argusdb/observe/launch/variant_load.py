"""Loading a variant's kernel (a transformed copy of the kernel's module) beside its parent.

Used by the hooks (the variant runs in place of the parent inside the program) and by the replay
worker (the parent's module is loaded from its file without running the program).

Example:
    >>> import ast
    >>> _variant_statement(ast.parse("import triton").body[0])
    True
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def load_variant(jit: Any, path: str, kernel: str) -> Any:
    """The variant's JIT function ``kernel`` (unwrapped from autotune/heuristics), loaded
    beside the parent's module without running the rest of the variant's module.

    The variant file is the parent module with the kernel rewritten and ``_argus`` helpers
    added. Running all of it again would repeat the module's side effects: a
    ``torch.library`` op registered again would then launch the variant's kernel past the
    hooks, a registry filled twice, GPU memory allocated at import. So the variant module
    starts as a copy of the parent module's namespace (its constants, helpers and imports,
    as the program set them up), and only the variant's imports, its ``_argus``/``_ARGUS``
    assignments and its Triton functions (``@triton.jit``, with ``autotune``/``heuristics``
    around them) run in it, compiled from the variant file at their own lines, so Triton reads
    their source from that file. Where that leaves the kernel undefined by the variant file
    (no loaded parent module, a kernel made by a call rather than a decorator) the whole file
    runs, as a module of its own.
    """
    import ast
    import importlib.util
    import types

    parent = sys.modules.get(jit.fn.__module__)
    name = f"{jit.fn.__module__}__argus_variant"
    if parent is not None:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
        tree.body = [n for n in tree.body if _variant_statement(n)]
        mod = types.ModuleType(name)
        skip = {"__name__", "__spec__", "__loader__", "__file__", "__cached__"}
        mod.__dict__.update({k: v for k, v in vars(parent).items() if k not in skip})
        mod.__file__ = path
        mod.__package__ = getattr(parent, "__package__", None)
        sys.modules[name] = mod
        exec(compile(tree, path, "exec"), mod.__dict__)
        obj = _jit_function(mod, kernel)
        if obj is not None and obj.fn.__code__.co_filename == path:
            return obj
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the variant {path}")
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = getattr(parent, "__package__", None)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    obj = _jit_function(mod, kernel)
    if obj is None:
        raise ImportError(f"the variant {path} defines no {kernel}")
    return obj


def _jit_function(mod: Any, kernel: str) -> Any:
    """``mod.<kernel>`` unwrapped from autotune/heuristics to its JIT function, or None."""
    from triton.runtime.jit import JITFunction

    kinds: tuple[type, ...] = (JITFunction,)
    try:
        from triton.runtime.interpreter import InterpretedFunction

        kinds += (InterpretedFunction,)
    except ImportError:
        pass
    obj = getattr(mod, kernel, None)
    while obj is not None and not isinstance(obj, kinds):  # autotune / heuristics wrappers
        obj = getattr(obj, "fn", None)
    return obj


#: Decorators (last dotted part) that make a function a Triton kernel or wrap one.
_TRITON_DECORATORS = {"jit", "autotune", "heuristics"}


def _variant_statement(node: Any) -> bool:
    """Whether a top-level statement of a variant file runs when the variant is loaded:
    imports, ``_argus``/``_ARGUS`` assignments, classes and calls, ``if`` blocks on ``_argus``
    names made of those (a transform's prelude), and Triton functions (see
    :func:`load_variant`)."""
    import ast

    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return all(isinstance(t, ast.Name) and t.id.lower().startswith("_argus")
                   for t in targets)
    if isinstance(node, ast.ClassDef):
        return node.name.lower().startswith("_argus")
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        # a call on an _argus name: the Proton prelude's enable_semantic("triton")
        root = node.value.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id.lower().startswith("_argus")
    if isinstance(node, ast.If):
        # an _argus prelude that differs under the interpreter: every branch is such
        # statements (a program's own `if` blocks are not run again)
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        return (bool(names) and all(n.lower().startswith("_argus") for n in names)
                and all(_variant_statement(n) for n in [*node.body, *node.orelse]))
    if isinstance(node, ast.FunctionDef):
        for d in node.decorator_list:
            f = d.func if isinstance(d, ast.Call) else d
            last = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if last in _TRITON_DECORATORS:
                return True
    return False
