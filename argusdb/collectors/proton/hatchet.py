"""Reader for Proton hatchet JSON (``proton.finalize()`` → ``*.hatchet``).

A hatchet file is ``[tree, devices]``: ``tree`` is the root frame (``ROOT``) with ``children``,
each node a ``frame`` (``name``, ``type``) and ``metrics``; ``devices`` maps backend and device
ID to facts (``arch``, ``num_sms``, ``clock_rate`` kHz, ...). Proton writes three kinds, told
apart by their metrics:

- scope tree (default mode): user scopes (``proton.scope``) with kernels below them; a kernel
  node has ``count`` (launches) and ``time (ns)`` (summed over those launches) →
  ``launch_count`` and ``duration_sum`` (ns), scope ``launch='all'``;
- PC sampling (``mode='pcsampling'``): a kernel node, and below it line nodes named
  ``<dir>/<file>:<line>@<function>``, with ``num_samples``, ``num_stalled_samples`` and
  ``stalled_<reason>`` → ``pc_samples``, ``pc_stalled_samples``, ``stall_<reason>`` (samples);
  line nodes carry ``source_file`` (file name only) and ``source_line``;
- intra-kernel instrumentation (``backend='instrumentation'``): scopes inside a kernel with
  ``cycles`` (summed over the recorded CTAs and warps) and ``normalized_cycles`` (divided by
  the number of (CTA, warp) instances) → ``scope_cycles`` and ``scope_cycles_normalized``,
  unit ``cycles`` (clock cycles of the SM, not time).

Every row carries ``scope_path``: the frame names from below ``ROOT`` down to the node
(``it0/k``; a line node as ``file.py:12@k``, never a directory). Other numeric metrics keep
their name in snake_case; a ``name (unit)`` metric gives its unit.

Checks before anything is stored: every metric (but the ``device_id``/``device_type`` labels) is
a finite, non-negative number (a string, a boolean, ``1e400`` or a negative time is refused); no
node has two children of the same frame name (Proton merges contexts by name, so a repeat
means an edited or concatenated tree); a CUDA device's ``arch`` is a known target.

A hatchet tree is an aggregate: it grows with the number of distinct contexts, not with the
length of the run, so it is read whole (ijson, C backend). ``src_row`` is the ordinal of the
value in this reader's output (depth-first, metrics in file order).

Example:
    >>> art = HatchetReader().read(Path("tree.hatchet"))
    >>> art.kind
    'proton.hatchet'
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import ijson
import pyarrow as pa

from argusdb.collectors.base import Artefact, Interference, evidence_batch
from argusdb.collectors.chrome import open_binary, read_errors
from argusdb.collectors.validate import known_target, measurement
from argusdb.errors import InputError

ADAPTER_VERSION = "proton.hatchet/1"
BATCH_ROWS = 4096
_LINE_FRAME = re.compile(r"^(?P<file>.*):(?P<line>\d+)@(?P<func>.+)$")
_UNIT_SUFFIX = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>[^()]*)\)$")
_NOT_SNAKE = re.compile(r"[^0-9a-z_]+")
#: Proton metric → (signal, unit). Others: snake_case name, unit from a '(unit)' suffix.
_SIGNALS = {
    "time (ns)": ("duration_sum", "ns"),
    "count": ("launch_count", "count"),
    "num_samples": ("pc_samples", "samples"),
    "num_stalled_samples": ("pc_stalled_samples", "samples"),
    "cycles": ("scope_cycles", "cycles"),
    "normalized_cycles": ("scope_cycles_normalized", "cycles"),
}
#: Metrics that label a node rather than measure it.
_LABELS = {"device_id", "device_type"}


def metric_signal(metric: str) -> tuple[str, str | None]:
    """Signal name and unit of a Proton metric.

    Example:
        >>> metric_signal("stalled_not_Selected")
        ('stall_not_selected', 'samples')
    """
    if metric in _SIGNALS:
        return _SIGNALS[metric]
    if metric.startswith("stalled_"):
        return "stall_" + metric[len("stalled_"):].lower(), "samples"
    m = _UNIT_SUFFIX.match(metric)
    name, unit = (m.group("name"), m.group("unit")) if m else (metric, None)
    return _NOT_SNAKE.sub("_", name.lower()).strip("_"), unit


class HatchetReader:
    """Proton hatchet JSON: scope tree, PC sampling or instrumentation aggregates."""

    kind = "proton.hatchet"

    def __init__(self, batch_rows: int = BATCH_ROWS) -> None:
        self.batch_rows = batch_rows

    def sniff(self, path: Path, head: bytes) -> bool:
        h = head.lstrip()
        return h.startswith(b"[") and b'"children"' in h and (b'"frame"' in h or
                                                                b'"metrics"' in h)

    def read(self, path: Path) -> Artefact:
        with read_errors(path, "Proton hatchet"), open_binary(path) as fh:
            items = list(ijson.items(fh, "item"))
        tree = items[0] if items else None
        if not isinstance(tree, dict) or "frame" not in tree:
            raise InputError(str(path), "has no root frame (expected [tree, devices])",
                             "pass a file written by proton.finalize() (hatchet format)")
        devices = items[1] if len(items) > 1 and isinstance(items[1], dict) else {}
        _check_children(path, tree)
        metrics = {m for node, _ in _walk(tree) for m in node.get("metrics") or {}}
        if any(m.startswith("stalled_") for m in metrics):
            kind, itf = "proton.pcsampling", Interference(pc_sampling=True, activity_tracing=True)
        elif "cycles" in metrics:
            kind, itf = "proton.instr_hatchet", Interference(instrumentation=True)
        else:
            kind, itf = "proton.hatchet", Interference(activity_tracing=True)
        rows = list(_rows(path, tree, kind))
        if not rows:
            raise InputError(str(path), "holds no metrics below ROOT",
                             "profile a run that launches kernels inside proton.start/finalize")
        device, target = _devices(path, devices)
        kernels = sorted({r["kernel"] for r in rows if r["kernel"]})
        meta = {"nodes": sum(1 for _ in _walk(tree)), "metrics": sorted(metrics),
                "mode": kind.split(".", 1)[1]}
        return Artefact(
            path=str(path), collector="proton", kind=kind, tool="Proton (triton.profiler)",
            adapter_version=ADAPTER_VERSION, batches=lambda: self._batches(rows),
            interference=itf, target=target, device=device, kernels=kernels, meta=meta)

    def _batches(self, rows: list[dict[str, Any]]) -> Iterator[tuple[str, pa.RecordBatch]]:
        for lo in range(0, len(rows), self.batch_rows):
            chunk = rows[lo:lo + self.batch_rows]
            cols = {k: [r[k] for r in chunk] for k in chunk[0]}
            yield "evidence", evidence_batch(cols)


def _walk(tree: dict[str, Any]) -> Iterator[tuple[dict[str, Any], tuple[str, ...]]]:
    """Depth-first ``(node, path)``; ``path`` holds the frame names below ROOT to the node."""
    stack: list[tuple[dict[str, Any], tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, path = stack.pop()
        yield node, path
        for child in reversed(node.get("children") or []):
            name = str((child.get("frame") or {}).get("name", "?"))
            m = _LINE_FRAME.match(name)
            if m:  # a line frame names a file path: keep the file name only
                name = f"{Path(m.group('file')).name}:{m.group('line')}@{m.group('func')}"
            stack.append((child, (*path, name)))


def _check_children(path: Path, tree: dict[str, Any]) -> None:
    """Refuse a node with two children of the same frame name, or a child that is no frame."""
    for node, where in _walk(tree):
        names: set[str] = set()
        for child in node.get("children") or []:
            if not isinstance(child, dict) or not isinstance(child.get("frame"), dict):
                raise InputError(str(path), f"node {'/'.join(where) or 'ROOT'} has a child that "
                                 "is not a frame", "pass a file written by proton.finalize()")
            name = str(child["frame"].get("name"))
            if name in names:
                raise InputError(str(path), f"node {'/'.join(where) or 'ROOT'} has two children "
                                 f"named {name[:60]!r} (Proton merges a context into one node)",
                                 "the tree was edited or concatenated; ingest the file "
                                 "proton.finalize() wrote")
            names.add(name)


def _rows(file: Path, tree: dict[str, Any], kind: str) -> Iterator[dict[str, Any]]:
    ordinal = 0
    instr = kind == "proton.instr_hatchet"
    for node, path in _walk(tree):
        metrics = node.get("metrics") or {}
        if not path or not metrics:
            continue  # ROOT (Proton leaves it zero) and pure scope nodes carry nothing
        kernel, src_file, src_line = path[-1], None, None
        m = _LINE_FRAME.match(path[-1])
        if m:
            kernel, src_file, src_line = m.group("func"), m.group("file"), int(m.group("line"))
        elif instr:
            kernel = _instr_kernel(tree, path)
        for metric, value in metrics.items():
            if metric in _LABELS:
                continue
            v = measurement(file, f"node {_short(path)}", metric, value)
            signal, unit = metric_signal(metric)
            yield {"kernel": kernel, "launch": "all", "source_file": src_file,
                   "source_line": src_line, "signal": signal, "value": v,
                   "unit": unit, "scope_path": "/".join(path), "src_row": ordinal}
            ordinal += 1


def _short(path: tuple[str, ...]) -> str:
    """A node path for a message: frame names cut to 40 characters, at most the last three."""
    names = [n if len(n) <= 40 else n[:37] + "..." for n in path[-3:]]
    return "/".join((["..."] if len(path) > 3 else []) + names)


def _instr_kernel(tree: dict[str, Any], path: tuple[str, ...]) -> str:
    """The kernel of an instrumented scope: the deepest ancestor without a ``cycles`` metric
    (Proton nests in-kernel scopes below the kernel's frame)."""
    node, kernel = tree, path[0]
    for name in path[:-1]:
        node = next(c for c in node.get("children") or []
                    if str((c.get("frame") or {}).get("name")) == name)
        if "cycles" not in (node.get("metrics") or {}):
            kernel = name
    return kernel


def _devices(path: Path, devices: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    facts = []
    for backend, by_id in devices.items():
        for dev_id, props in (by_id or {}).items():
            facts.append({"backend": backend, "id": dev_id,
                          **{k: (float(v) if isinstance(v, Decimal) else v)
                             for k, v in (props or {}).items()}})
    # A CUDA target only for the CUDA backend (a HIP device's arch is gfx..., not sm_XY).
    targets = {known_target(path, str(f["arch"]), "arch (CUDA device)") for f in facts
               if f.get("arch") is not None and str(f["backend"]).upper() == "CUDA"}
    target = targets.pop() if len(targets) == 1 else None
    out: dict[str, Any] = {"devices": facts}
    if target:
        out["target"] = target
    return out, target
