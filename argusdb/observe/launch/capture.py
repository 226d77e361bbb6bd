"""Capture of the measured launch, and its restore in another process (the replay worker).

At the launch a plan measures (the chosen binary's ``warmup``-th launch outside autotuning and
graph capture, as :func:`argusdb.observe.runner.command.discovery` picks it), the hooks copy
what the launch reads and writes before it runs: each storage its tensor arguments view (the
byte span they cover, once per storage, so arguments that alias one storage stay aliased),
with each tensor's dtype, shape, stride and offset in it; scalar arguments and constexprs as
values; the launch options (``num_warps``, ``num_stages``, ...) and the resolved grid. At exit
the capture of the chosen binary is written to ``OUT/capture/`` (``launch.json`` and one
``storage.<k>.bin`` of raw bytes per storage).

A capture is refused, with the reason, where a replay could not stand in for the launch:
arguments whose spans add up beyond the limit (``--capture-limit``), an argument that is not a
tensor or a plain value (a host-built TMA descriptor, a tuple), an integer tensor that holds
addresses of device memory (a pointer table: the kernel reaches memory that is not among its
arguments), or a binary launched only inside CUDA graph capture.

:func:`load` rebuilds the arguments on a device from the files; :meth:`Restored.restore`
copies the captured bytes back before every replayed launch, as Nsight Compute restores memory
between its passes, so a kernel that writes its inputs replays on the same inputs each time.

Example:
    >>> import torch
    >>> x = torch.arange(8.0)
    >>> snap = snapshot((x, x[2:], 3), {"BLOCK": 4}, (2,), ["x", "y", "n"], 1 << 20)
    >>> snap.refusal is None, len(snap.storages), snap.args[1]["offset_bytes"]
    (True, 1, 8)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Folder of a task's capture, below the task folder.
FOLDER = "capture"
#: Default bound on the bytes a capture copies (``--capture-limit``).
DEFAULT_LIMIT_BYTES = 4 << 30
#: A restored storage keeps its address modulo this (Triton specializes pointers by 16).
ALIGN = 256
#: Integer tensors up to this many elements are looked at for device addresses.
POINTER_TABLE_MAX = 1 << 16


@dataclass
class Snapshot:
    """One launch's arguments, copied on their device (``storages``) until written."""

    args: list[dict[str, Any]] = field(default_factory=list)
    kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    grid: list[int] = field(default_factory=list)
    storages: list[Any] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    bytes: int = 0
    refusal: str | None = None
    launch: int | None = None


def _fmt_bytes(n: int) -> str:
    """``4.00 GiB``, ``12.5 MiB``, ``1024 B``."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} B"


def limit_bytes(text: str | int | None) -> int:
    """``--capture-limit`` as bytes: an int, or text with a unit (``512M``, ``4G``, ``4GiB``).

    Raises:
        ValueError: text that is neither.
    """
    if text is None:
        return DEFAULT_LIMIT_BYTES
    if isinstance(text, int):
        return text
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "KMGT" else t
    return int(float(num) * scale)


def _extent(t: Any) -> tuple[int, int]:
    """Byte offset in its storage and byte length of the span a tensor view covers."""
    item = t.element_size()
    if t.numel() == 0:
        return t.storage_offset() * item, 0
    last = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride(), strict=True))
    return t.storage_offset() * item, (last + 1) * item


def _plain_value(v: Any) -> tuple[bool, Any]:
    """Whether ``v`` is a value a replay can pass as it is (JSON), and that value."""
    v = getattr(v, "value", v) if type(v).__name__ == "constexpr" else v
    if v is None or isinstance(v, bool | int | float | str):
        return True, v
    return False, None


def _describe_other(name: str, v: Any) -> str:
    kind = type(v).__name__
    if "TensorDescriptor" in kind or "descriptor" in kind.lower():
        return (f"argument {name} is a host-built TMA descriptor ({kind}): it holds addresses "
                "the replay would have to rebuild")
    return (f"argument {name} is a {kind}, neither a tensor nor a plain value: a replay cannot "
            "rebuild it")


def pointer_table(values: Sequence[int], ranges: Sequence[tuple[int, int]]) -> bool:
    """Whether any of ``values`` falls in one of ``ranges`` (address, size): an integer tensor
    that holds device addresses."""
    for v in values:
        for start, size in ranges:
            if start <= v < start + size:
                return True
    return False


def _device_ranges(tensors: list[Any]) -> list[tuple[int, int]]:
    """Address ranges a pointer could point into: the CUDA caching allocator's segments, and
    the storages of the launch's own tensor arguments."""
    out = [(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()) for t in tensors]
    if any(t.is_cuda for t in tensors):
        import torch

        out += [(int(s["address"]), int(s["total_size"]))
                for s in torch.cuda.memory.memory_snapshot()]
    return out


def snapshot(args: Sequence[Any], kwargs: dict[str, Any], grid: Sequence[int],
             names: Sequence[str], limit: int) -> Snapshot:
    """Copy one launch's arguments (before it runs): see the module docstring.

    ``names`` names the positional arguments (the JIT function's ``arg_names``), for messages
    and the record. A refused snapshot holds no copies and says why in ``refusal``.
    """
    import torch

    snap = Snapshot(grid=[int(g) for g in grid])
    named = [(str(names[i]) if i < len(names) else f"#{i}", a) for i, a in enumerate(args)]
    named += list(kwargs.items())
    tensors = [(n, v) for n, v in named if isinstance(v, torch.Tensor)]
    for n, v in named:
        if not isinstance(v, torch.Tensor) and not _plain_value(v)[0]:
            snap.refusal = _describe_other(n, v)
            return snap
    # one span per storage: the union of the byte ranges its views cover
    by_storage: dict[int, list[tuple[str, Any]]] = {}
    for n, t in tensors:
        by_storage.setdefault(t.untyped_storage().data_ptr(), []).append((n, t))
    spans: dict[int, tuple[int, int]] = {}
    for key, views in by_storage.items():
        ext = [_extent(t) for _, t in views]
        lo = min(o for o, _ in ext)
        hi = max(o + ln for o, ln in ext)
        spans[key] = (lo, hi)
    total = sum(hi - lo for lo, hi in spans.values())
    if total > limit:
        snap.refusal = (f"the launch's tensor arguments span {_fmt_bytes(total)}, over the "
                        f"capture limit of {_fmt_bytes(limit)} (--capture-limit)")
        return snap
    ranges: list[tuple[int, int]] | None = None
    for n, t in tensors:
        if t.dtype in (torch.int64, torch.uint64) and 0 < t.numel() <= POINTER_TABLE_MAX:
            ranges = ranges if ranges is not None else _device_ranges([x for _, x in tensors])
            values = [int(v) for v in t.detach().reshape(-1).cpu().tolist()]
            if pointer_table(values, ranges):
                snap.refusal = (f"argument {n} ({t.dtype}, {t.numel()} elements) holds device "
                                "addresses (a pointer table): the kernel reaches memory that "
                                "is not among its arguments, which a replay would not restore")
                return snap
    index = {key: k for k, key in enumerate(spans)}
    for key, (lo, hi) in spans.items():
        t0 = by_storage[key][0][1]
        raw = torch.empty(0, dtype=torch.uint8, device=t0.device)
        raw.set_(t0.untyped_storage(), lo, (hi - lo,), (1,))
        snap.storages.append(raw.clone())
        snap.spans.append({"bytes": hi - lo, "align": (key + lo) % ALIGN,
                           "device": t0.device.type})
    snap.bytes = total

    def describe(v: Any) -> dict[str, Any]:
        if isinstance(v, torch.Tensor):
            key = v.untyped_storage().data_ptr()
            return {"kind": "tensor", "storage": index[key],
                    "offset_bytes": _extent(v)[0] - spans[key][0],
                    "dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape),
                    "stride": list(v.stride())}
        return {"kind": "value", "value": _plain_value(v)[1]}

    snap.args = [describe(a) | {"name": n} for n, a in named[:len(args)]]
    snap.kwargs = {k: describe(v) for k, v in kwargs.items()}
    return snap


def resolve_grid(jit: Any, grid: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> list[int]:
    """The launch grid as three ints: ``grid`` itself, or a callable grid evaluated on the
    launch's bound arguments (as ``JITFunction.run`` does)."""
    import inspect

    if callable(grid):
        sig = inspect.signature(jit.fn)
        bound = sig.bind(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
        bound.apply_defaults()
        grid = grid(dict(bound.arguments))
    dims = [int(g) for g in grid]
    return [*dims, 1, 1, 1][:3]


class LaunchCapture:
    """The hooks' capture concern: holds, per binary, the snapshot of the launch a plan would
    measure of it (its ``warmup``-th launch outside autotuning and graph capture, else its last),
    and writes the chosen binary's at exit."""

    def __init__(self, out: Path, warmup: int, limit: int) -> None:
        self.out, self.warmup, self.limit = out, warmup, limit
        self.held: dict[str, Snapshot] = {}
        self.counts: dict[str, int] = {}
        self.frozen = False

    def wants(self, predicted: str | None) -> bool:
        """Whether to copy the next launch's arguments: its binary (``predicted`` before it
        runs, None when not known yet) has not reached the measured launch. After the first
        launch inside graph capture nothing more is counted (as the control task counts)."""
        if self.frozen:
            return False
        return predicted is None or self.counts.get(predicted, 0) <= self.warmup

    def before(self, jit: Any, args: Sequence[Any], kwargs: dict[str, Any],
               grid: Any) -> Snapshot:
        """Copy the arguments of the launch about to run."""
        try:
            dims = resolve_grid(jit, grid, args, kwargs)
        except Exception as exc:
            return Snapshot(refusal=f"the launch's grid could not be evaluated again: {exc!r}")
        return snapshot(args, kwargs, dims, list(getattr(jit, "arg_names", [])), self.limit)

    def after(self, snap: Snapshot | None, binary: str, launch: int, captured: bool) -> None:
        """Count the launch of ``binary`` (hook index ``launch``), keeping its snapshot when it
        is the one the plan measures so far."""
        if captured:
            self.frozen = True
            return
        if self.frozen:
            return
        n = self.counts.get(binary, 0)
        self.counts[binary] = n + 1
        if snap is not None and n <= self.warmup:
            snap.launch = launch
            self.held[binary] = snap

    def write(self, chosen: str | None, meta: dict[str, Any]) -> dict[str, Any]:
        """Write the chosen binary's capture to ``out/capture``; returns what the launch record
        says of it (``ok``, ``launch``, ``bytes``, or ``why`` not)."""
        snap = self.held.get(chosen or "")
        if snap is None:
            return {"ok": False, "why": f"binary {chosen} was launched only inside CUDA graph "
                    "capture (or never): no launch of its own to copy the arguments of"}
        if snap.refusal is not None:
            return {"ok": False, "why": snap.refusal, "launch": snap.launch}
        folder = self.out / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for k, buf in enumerate(snap.storages):
            name = f"storage.{k}.bin"
            buf.cpu().numpy().tofile(folder / name)
            files.append(name)
        doc = {"binary": chosen, "launch": snap.launch, "args": snap.args,
               "kwargs": snap.kwargs, "grid": snap.grid, "bytes": snap.bytes,
               "storages": [s | {"file": f} for s, f in zip(snap.spans, files, strict=True)],
               **meta}
        (folder / "launch.json").write_text(json.dumps(doc, indent=1))
        return {"ok": True, "launch": snap.launch, "bytes": snap.bytes, "folder": FOLDER,
                "storages": len(files)}


@dataclass
class Restored:
    """A capture rebuilt on a device: arguments to launch with, and the bytes to restore."""

    doc: dict[str, Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grid: tuple[int, ...]
    buffers: list[Any]
    pristine: list[Any]

    def restore(self) -> None:
        """Copy the captured bytes back into every storage (before each replayed launch)."""
        for buf, orig in zip(self.buffers, self.pristine, strict=True):
            buf.copy_(orig)

    def tensors(self) -> list[Any]:
        """The positional arguments (tensors and values), in order."""
        return list(self.args)


def load(folder: Path, device: str | None = None) -> Restored:
    """Rebuild a capture (``folder`` = a task's ``capture/``) on ``device`` (default: the
    device it was captured on)."""
    import numpy as np
    import torch

    doc = json.loads((folder / "launch.json").read_text())
    buffers, pristine, bases = [], [], []
    for s in doc["storages"]:
        dev = device or ("cuda" if s["device"] == "cuda" else "cpu")
        raw = torch.from_numpy(np.fromfile(folder / s["file"], dtype=np.uint8)).to(dev)
        if raw.numel() != s["bytes"]:
            raise ValueError(f"{folder / s['file']}: {raw.numel()} bytes, the capture says "
                             f"{s['bytes']}")
        whole = torch.empty(s["bytes"] + ALIGN, dtype=torch.uint8, device=dev)
        pad = (s["align"] - whole.data_ptr()) % ALIGN
        buf = whole[pad:pad + s["bytes"]]
        buf.copy_(raw)
        buffers.append(buf)
        pristine.append(raw)
        bases.append(pad)

    def build(d: dict[str, Any]) -> Any:
        if d["kind"] == "value":
            return d["value"]
        k = d["storage"]
        dt = getattr(torch, d["dtype"])
        item = torch.empty(0, dtype=dt).element_size()
        t = torch.empty(0, dtype=dt, device=buffers[k].device)
        t.set_(buffers[k].untyped_storage(), (bases[k] + d["offset_bytes"]) // item,
               tuple(d["shape"]), tuple(d["stride"]))
        return t

    args = tuple(build(d) for d in doc["args"])
    kwargs = {k: build(d) for k, d in doc["kwargs"].items()}
    return Restored(doc, args, kwargs, tuple(doc["grid"]), buffers, pristine)
