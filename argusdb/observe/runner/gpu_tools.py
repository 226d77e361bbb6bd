"""What the GPU side needs at run time: CUPTI activity sessions, tool paths, compiled artefacts.

Shared by the packaged worker (:mod:`argusdb.observe.runner.worker`), the launcher hooks
(:mod:`argusdb.observe.launch`) and the recording tools in ``tools/h200/``. Nothing here is imported
on a CPU-only path: ``cupti`` and ``torch`` are imported where they are used.

Example:
    >>> act = Activity()  # doctest: +SKIP
    >>> act.start(); ...; recs = act.stop(Path("timing.cupti.jsonl"))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path
from types import ModuleType
from typing import Any


def load_module(path: Path, name: str) -> ModuleType:
    """Import a Python file under ``name`` (a harness kernel source)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod



def interpreter_index_shim() -> None:
    """Let Triton 3.6's interpreter run ``range()`` over runtime ints with numpy >= 2.4.

    The interpreter turns a 1-element array into an index with ``int(array)``, which numpy 2.4
    refuses; this makes it take the element instead (same value). Needed only under
    ``TRITON_INTERPRET=1`` (CPU dry and smoke runs); a second call changes nothing.
    """
    import triton.runtime.interpreter as interp

    if getattr(interp, "_argus_shimmed", False):
        return
    orig = interp._patch_lang_tensor

    def patched(tensor: Any, scope: Any) -> None:
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interp._patch_lang_tensor = patched
    interp._argus_shimmed = True

def sync() -> None:
    """Wait for the GPU when torch has a CUDA device (no-op otherwise)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


class Activity:
    """cupti-python activity tracing as sessions: start(), launches, stop(path) writes JSON lines.

    Records are the ``CONCURRENT_KERNEL`` and ``RUNTIME`` kinds, with the field names of the
    fixtures (``argusdb/demo/h200/*/*.cupti.jsonl``) that ``argusdb/collectors/cupti`` reads.
    """

    KERNEL_FIELDS = ("name", "start", "end", "correlation_id", "grid_x", "grid_y", "grid_z",
                     "block_x", "block_y", "block_z", "registers_per_thread",
                     "static_shared_memory", "dynamic_shared_memory", "stream_id", "device_id",
                     "context_id")
    GRAPH_FIELDS = ("graph_id", "graph_node_id")
    RUNTIME_FIELDS = ("start", "end", "correlation_id", "cbid", "process_id", "thread_id")

    def __init__(self) -> None:
        from cupti import cupti

        self.cupti = cupti
        self.records: list[dict[str, Any]] = []
        self.calls: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()
        self.registered = False
        self.kinds: list[Any] = []

    def _completed(self, activities: Any) -> None:
        kernels, calls = [], []
        kernel_kind = self.cupti.ActivityKind.CONCURRENT_KERNEL
        runtime_kind = self.cupti.ActivityKind.RUNTIME
        for a in activities:
            if a.kind == kernel_kind:
                rec: dict[str, Any] = {"kind": "CONCURRENT_KERNEL"}
                rec.update({f: getattr(a, f) for f in self.KERNEL_FIELDS})
                # the graph a replayed kernel node ran in (0: a launch of its own)
                rec.update({f: getattr(a, f, 0) or 0 for f in self.GRAPH_FIELDS})
                kernels.append(rec)
            elif a.kind == runtime_kind:
                # kept as a tuple: most calls launch nothing and are dropped at stop()
                calls.append(tuple(getattr(a, f) for f in self.RUNTIME_FIELDS))
        with self.lock:
            self.records.extend(kernels)
            self.calls.extend(calls)

    def start(self, kinds: tuple[str, ...] = ("CONCURRENT_KERNEL", "RUNTIME")) -> None:
        if not self.registered:
            self.cupti.activity_register_callbacks(lambda: (8 * 1024 * 1024, 0), self._completed)
            self.registered = True
        self.kinds = [getattr(self.cupti.ActivityKind, k) for k in kinds]
        for k in self.kinds:
            self.cupti.activity_enable(k)

    def stop(self, path: Path | None) -> list[dict[str, Any]]:
        """End the session: its kernel records and the runtime calls that launched them (a
        call that launched no recorded kernel names nothing the reader keeps: dropped), in
        start order."""
        sync()
        self.cupti.activity_flush_all(1)
        for k in self.kinds:
            self.cupti.activity_disable(k)
        with self.lock:
            recs, self.records = self.records, []
            calls, self.calls = self.calls, []
        recs = recs + launching_calls(recs, calls, self.RUNTIME_FIELDS)
        recs.sort(key=lambda r: r["start"])
        if path is not None:
            write_jsonl(path, recs)
        return recs


def launching_calls(kernels: list[dict[str, Any]], calls: list[tuple[Any, ...]],
                    fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """The ``RUNTIME`` records (``calls``: values of ``fields``) whose correlation ID is a
    kernel record's: the launching calls the reader joins to kernels
    (:mod:`argusdb.collectors.cupti.activity`); the others it would drop."""
    corr = fields.index("correlation_id")
    wanted = {r["correlation_id"] for r in kernels}
    return [{"kind": "RUNTIME", **dict(zip(fields, c, strict=True))} for c in calls
            if c[corr] in wanted]


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> None:
    """Write activity records one a line, between a header and a trailer that counts them
    (:data:`argusdb.collectors.cupti.activity.HEADER`): the reader refuses a file that has the
    header and not a trailer with the count, i.e. one cut short, even at a record boundary."""
    from argusdb.collectors.cupti.activity import HEADER, TRAILER

    encode = json.JSONEncoder().encode
    with open(path, "w", buffering=1 << 20) as fh:
        fh.write(encode(HEADER) + "\n")
        for i in range(0, len(recs), 4096):
            fh.write("".join([encode(r) + "\n" for r in recs[i:i + 4096]]))
        fh.write(encode({"kind": TRAILER, "records": len(recs)}) + "\n")


def kernel_durations_us(recs: list[dict[str, Any]], name: str) -> list[float]:
    """Durations (µs) of the kernel records named ``name``."""
    return [(r["end"] - r["start"]) / 1e3 for r in recs
            if r["kind"] == "CONCURRENT_KERNEL" and r["name"] == name]


def ncu_path() -> str | None:
    """Nsight Compute's ``ncu`` (PATH, else the newest /usr/local/cuda*/bin/ncu)."""
    found = shutil.which("ncu") or next(iter(sorted(Path("/usr/local").glob("cuda*/bin/ncu"))),
                                        None)
    return str(found) if found else None


def nvdisasm() -> str | None:
    """``nvdisasm`` of Triton's NVIDIA backend, else PATH."""
    try:
        import triton
    except ImportError:
        return shutil.which("nvdisasm")
    cand = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    return str(cand) if cand.exists() else shutil.which("nvdisasm")


def save_asm(compiled: Any, out: Path, stem: str) -> dict[str, Any]:
    """Write TTGIR, PTX and SASS (``nvdisasm -g -gi -c``) of a compiled kernel.

    Returns what was written (``files``) and the binary's metadata (num_warps, num_stages,
    shared memory, name, target) and instruction counts of its SASS.
    """
    info: dict[str, Any] = {"files": []}
    if compiled is None or not hasattr(compiled, "asm"):
        return info
    asm = compiled.asm
    for key in ("ttgir", "ptx"):
        if key in asm:
            (out / f"{stem}.{key}").write_text(asm[key])
            info["files"].append(f"{stem}.{key}")
    tool = nvdisasm()
    if "cubin" in asm and tool:
        cubin = out / f"{stem}.cubin"
        cubin.write_bytes(asm["cubin"])
        sass = subprocess.run([tool, "-g", "-gi", "-c", str(cubin)], capture_output=True,
                              text=True).stdout
        cubin.unlink()
        (out / f"{stem}.sass").write_text(sass)
        info["files"].append(f"{stem}.sass")
        lines = [ln for ln in sass.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/ ", ln)]
        info.update({"sass_instructions": len(lines),
                     "shfl_idx_laneid": sum("SHFL.IDX" in ln for ln in lines),
                     "ldg": sum("LDG" in ln for ln in lines)})
    md = getattr(compiled, "metadata", None)
    if md is not None:
        info.update({"num_warps": getattr(md, "num_warps", None),
                     "num_stages": getattr(md, "num_stages", None),
                     "shared": getattr(md, "shared", None), "name": getattr(md, "name", None)})
    return info
