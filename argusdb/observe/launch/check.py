"""The launch hooks' variant-check concern: a variant's outputs against the parent's.

A variant (a forced wait, Proton scopes, other options) must compute the parent's result. The
check runs the variant on the program's inputs and the parent on copies of the same inputs,
then compares every tensor argument: inputs stay equal, outputs must agree. Which arguments
are outputs cannot be told from the values (a buffer reused from the previous launch may
already hold the result), so all are compared. The replay worker
(:mod:`argusdb.observe.runner.replay`) compares with :func:`compare` too, on restored inputs.

Example:
    >>> import torch
    >>> a = torch.ones(4)
    >>> compare([a], [a.clone()], [a.clone()])["rel_err_vs_parent"]
    0.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def compare(variant: Sequence[Any], parent: Sequence[Any], before: Sequence[Any]
            ) -> dict[str, Any]:
    """The largest relative difference of the variant's tensor arguments from the parent's
    after both launches (``before``: the arguments before either), and how many tensors were
    compared and written. Non-tensors are skipped."""
    import torch

    errs: list[float] = []
    changed = 0
    for a, p, b in zip(variant, parent, before, strict=True):
        if not isinstance(a, torch.Tensor) or a.numel() == 0:
            continue
        changed += int(not torch.equal(a, b) or not torch.equal(p, b))
        ref = p.double()
        scale = max(float(ref.abs().max()), 1e-30)
        errs.append(float((a.double() - ref).abs().max()) / scale)
    return {"tensors_compared": len(errs), "tensors_written": changed,
            "rel_err_vs_parent": max(errs) if errs else None}


class VariantCheck:
    """Checks the variant once, at the program's ``index``-th launch outside graph capture."""

    def __init__(self, index: int) -> None:
        self.index = index
        #: ``launch``, ``tensors_compared``, ``tensors_written``, ``rel_err_vs_parent``,
        #: ``variant_binary``, ``parent_binary`` once checked
        self.result: dict[str, Any] | None = None

    def due(self, role: str, captured: bool, settled: int) -> bool:
        """Whether this launch is the checked one. Never inside CUDA graph capture: copies, a
        second launch and comparisons would be captured too (and a comparison's sync
        invalidates the capture)."""
        return (role == "program" and self.result is None and not captured
                and settled >= self.index)

    def run(self, variant: Callable[[], Any], parent: Callable[[tuple[Any, ...],
                                                                 dict[str, Any]], Any],
            args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, tuple[Any, ...],
                                                                   dict[str, Any]]:
        """Run ``variant()`` on the program's inputs, then ``parent(args, kwargs)`` on copies;
        returns both kernels and the copies the parent ran on (for the launch record)."""
        import torch

        def copy(x: Any) -> Any:
            return x.clone() if isinstance(x, torch.Tensor) else x

        before = [copy(a) for a in args]
        parent_args = tuple(copy(a) for a in args)
        parent_kw = {k: copy(v) for k, v in kwargs.items()}
        kernel = variant()
        pk = parent(parent_args, parent_kw)
        self.result = compare(args, parent_args, before)
        return kernel, pk, parent_args, parent_kw
