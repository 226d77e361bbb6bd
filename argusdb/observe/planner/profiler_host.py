"""Replay pass counts of Nsight Compute / CUPTI metric lists, from CUPTI's own scheduler.

How many replay passes a list of hardware metrics needs on a chip is decided by CUPTI's
*profiler host* API (``cuptiProfilerHostConfigAddMetrics`` → config image →
``cuptiProfilerHostGetNumOfPasses``). It is a host API: it needs ``libcupti`` (with its
``libnvperf_host``) but no GPU. Two ways to reach it, tried in this order:

1. cupti-python ≥ 13.4 (``cupti.profiler_host``, the ``gpu`` extra). Its loader asks the CUDA
   driver for its version first, so it only works where a driver is installed (the GPU host).
2. ``ctypes`` over a ``libcupti.so`` that exports ``cuptiProfilerHost*`` (CUDA ≥ 12.6, e.g. a
   CUDA toolkit). CUPTI 13.0's host API runs without any driver; the structs below are those of
   ``cupti_profiler_host.h`` in CUDA 13.0, and newer CUPTI accepts them (each carries its size).

Where neither is present the planner uses the table recorded with :func:`record_table`
(``argusdb/observe/planner/data/passes_gh100.json``) and says so; it never guesses a pass count.

Example:
    >>> counter = live_counter()          # None where no libcupti is reachable
    >>> counter.passes("GH100", ["dram__bytes_read.sum"]) if counter else None
    1
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from argusdb import environment

#: Chip name CUPTI uses for the H200 / H100 (compute capability 9.0).
CHIPS = {"sm_90": "GH100"}
_RANGE_PROFILER = 0
_METRIC_TYPES = {"counter": 0, "ratio": 1, "throughput": 2}


class PassCounter(Protocol):
    """Something that knows how many replay passes a metric list needs on a chip."""

    name: str

    def passes(self, chip: str, metrics: Sequence[str]) -> int | None:
        """Passes for ``metrics`` collected together; None when a metric is not valid."""
        ...


class CuptiPythonCounter:
    """Pass counts through cupti-python's ``cupti.profiler_host`` (needs a CUDA driver)."""

    name = "CUPTI profiler host via cupti-python"

    def __init__(self) -> None:
        from cupti import profiler_host

        self._ph = profiler_host
        self.version = _dist_version("cupti-python")
        profiler_host.get_supported_chips()  # raises where the loader finds no driver

    def passes(self, chip: str, metrics: Sequence[str]) -> int | None:
        from cupti.cupti import ProfilerType

        host = self._ph.ProfilerHost(chip, ProfilerType.RANGE_PROFILER)
        host.initialize()
        try:
            image = host.create_config_image(list(metrics))
        except ValueError:
            return None
        finally:
            host.deinitialize()
        return int(self._ph.get_num_of_passes(image))


class _Init(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("profilerType", ctypes.c_int), ("pChipName", ctypes.c_char_p),
                ("pCounterAvailabilityImage", ctypes.c_void_p), ("pHostObject", ctypes.c_void_p)]


class _Deinit(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("pHostObject", ctypes.c_void_p)]


class _AddMetrics(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("pHostObject", ctypes.c_void_p),
                ("ppMetricNames", ctypes.POINTER(ctypes.c_char_p)),
                ("numMetrics", ctypes.c_size_t)]


class _ImageSize(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("pHostObject", ctypes.c_void_p), ("configImageSize", ctypes.c_size_t)]


class _Image(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("pHostObject", ctypes.c_void_p), ("configImageSize", ctypes.c_size_t),
                ("pConfigImage", ctypes.c_void_p)]


class _NumPasses(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("configImageSize", ctypes.c_size_t), ("pConfigImage", ctypes.c_void_p),
                ("numOfPasses", ctypes.c_size_t)]


class _BaseMetrics(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("pHostObject", ctypes.c_void_p), ("metricType", ctypes.c_int),
                ("ppMetricNames", ctypes.POINTER(ctypes.c_char_p)),
                ("numMetrics", ctypes.c_size_t)]


class _SubMetrics(ctypes.Structure):
    _fields_ = [("structSize", ctypes.c_size_t), ("pPriv", ctypes.c_void_p),
                ("pHostObject", ctypes.c_void_p), ("metricType", ctypes.c_int),
                ("pMetricName", ctypes.c_char_p), ("numOfSubmetrics", ctypes.c_size_t),
                ("ppSubMetrics", ctypes.POINTER(ctypes.c_char_p))]


def _new(struct: type[ctypes.Structure], **fields: Any) -> ctypes.Structure:
    s = struct(structSize=ctypes.sizeof(struct))
    for k, v in fields.items():
        setattr(s, k, v)
    return s


class CtypesCounter:
    """Pass counts through ``libcupti``'s profiler host C API, via ctypes (no driver needed)."""

    name = "CUPTI profiler host via libcupti"

    def __init__(self, path: str) -> None:
        self.path = path
        self._lib = ctypes.CDLL(path)
        self._lib.cuptiProfilerHostInitialize  # noqa: B018  (AttributeError: too old a CUPTI)
        ver = ctypes.c_uint32()
        self._lib.cuptiGetVersion(ctypes.byref(ver))
        self.version = f"CUPTI {ver.value // 10000}.{ver.value // 100 % 100} (API {ver.value})"

    def _call(self, fn: str, params: ctypes.Structure) -> int:
        return int(getattr(self._lib, fn)(ctypes.byref(params)))

    def _host(self, chip: str) -> ctypes.Structure:
        init = _new(_Init, profilerType=_RANGE_PROFILER, pChipName=chip.encode())
        rc = self._call("cuptiProfilerHostInitialize", init)
        if rc:
            raise RuntimeError(f"cuptiProfilerHostInitialize({chip}) failed with CUPTI error {rc}")
        return init

    def _free(self, host: ctypes.Structure) -> None:
        self._call("cuptiProfilerHostDeinitialize", _new(_Deinit, pHostObject=host.pHostObject))

    def passes(self, chip: str, metrics: Sequence[str]) -> int | None:
        # A host object accumulates metrics, so every question gets a fresh one.
        host = self._host(chip)
        try:
            names = (ctypes.c_char_p * len(metrics))(*[m.encode() for m in metrics])
            add = _new(_AddMetrics, pHostObject=host.pHostObject, ppMetricNames=names,
                       numMetrics=len(metrics))
            if self._call("cuptiProfilerHostConfigAddMetrics", add):
                return None  # CUPTI_ERROR_INVALID_METRIC_NAME and kin
            size = _new(_ImageSize, pHostObject=host.pHostObject)
            self._check("cuptiProfilerHostGetConfigImageSize", size)
            buf = (ctypes.c_uint8 * size.configImageSize)()
            img = _new(_Image, pHostObject=host.pHostObject,
                       configImageSize=size.configImageSize,
                       pConfigImage=ctypes.cast(buf, ctypes.c_void_p))
            self._check("cuptiProfilerHostGetConfigImage", img)
            num = _new(_NumPasses, configImageSize=size.configImageSize,
                       pConfigImage=ctypes.cast(buf, ctypes.c_void_p))
            self._check("cuptiProfilerHostGetNumOfPasses", num)
            return int(num.numOfPasses)
        finally:
            self._free(host)

    def base_metrics(self, chip: str) -> dict[str, list[str]]:
        """Base metric names of the chip by metric type (counter, ratio, throughput)."""
        host = self._host(chip)
        try:
            out: dict[str, list[str]] = {}
            for tname, tval in _METRIC_TYPES.items():
                p = _new(_BaseMetrics, pHostObject=host.pHostObject, metricType=tval)
                self._check("cuptiProfilerHostGetBaseMetrics", p)
                out[tname] = sorted(p.ppMetricNames[i].decode() for i in range(p.numMetrics))
            return out
        finally:
            self._free(host)

    def sub_metrics(self, chip: str, metric: str, mtype: str) -> list[str]:
        """Sub-metric suffixes CUPTI accepts after ``metric`` (e.g. ``.sum``, ``.avg.pct_…``)."""
        host = self._host(chip)
        try:
            p = _new(_SubMetrics, pHostObject=host.pHostObject, metricType=_METRIC_TYPES[mtype],
                     pMetricName=metric.encode())
            self._check("cuptiProfilerHostGetSubMetrics", p)
            return [p.ppSubMetrics[i].decode() for i in range(p.numOfSubmetrics)]
        finally:
            self._free(host)

    def _check(self, fn: str, params: ctypes.Structure) -> None:
        rc = self._call(fn, params)
        if rc:
            raise RuntimeError(f"{fn} failed with CUPTI error {rc}")


def _dist_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _libcupti_candidates() -> list[str]:
    out = []
    own = environment.LIBCUPTI.get()
    if own:
        out.append(own)
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            out += [f"{root}/lib64/libcupti.so", f"{root}/lib/libcupti.so",
                    f"{root}/extras/CUPTI/lib64/libcupti.so"]
    found = ctypes.util.find_library("cupti")
    if found:
        out.append(found)
    return out


def live_counter() -> PassCounter | None:
    """The first working profiler host on this machine, or None (then the table is used)."""
    try:
        return CuptiPythonCounter()
    except Exception:  # ImportError, or no CUDA driver: cupti raises its own error types
        pass
    for cand in _libcupti_candidates():
        if cand.startswith("/") and not Path(cand).exists():
            continue
        try:
            return CtypesCounter(cand)
        except (OSError, AttributeError):
            continue
    return None


class TableCounter:
    """Pass counts recorded into a JSON table by :func:`record_table` (exact lists only)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        made = doc["produced_by"]
        self.name = f"{made['cupti']} profiler host, as recorded {made['at'][:10]}"
        self._lists = {_key(e["metrics"]): int(e["passes"]) for e in doc["lists"]}
        self._bases = {t: set(b) for t, b in doc["base_metrics"].items()}
        self._subs = {t: sorted(s, key=len, reverse=True) for t, s in doc["sub_metrics"].items()}

    def passes(self, chip: str, metrics: Sequence[str]) -> int | None:
        if chip != self.doc["chip"]:
            return None
        return self._lists.get(_key(metrics))

    def is_metric(self, name: str) -> bool:
        """True when ``name`` is ``<base metric><sub-metric>`` as CUPTI listed them for the chip.

        Base names may hold dots themselves (``FBSP.TriageCompute.dramc__throughput``), so the
        name is split at each known sub-metric suffix rather than at its first dot.
        """
        for mtype, subs in self._subs.items():
            for sub in subs:
                if name.endswith(sub) and name[: -len(sub)] in self._bases[mtype]:
                    return True
        return False

    def metric_names(self) -> list[str]:
        """Every base metric."""
        return sorted(b for bases in self.doc["base_metrics"].values() for b in bases)

    def suggest(self, name: str, n: int = 3) -> list[str]:
        """Metric names close to ``name``: its sub-metric fixed when the base is right, else
        close bases with the sub-metric asked for (or ``.sum``)."""
        import difflib

        for mtype, bases in self._bases.items():
            base = next((b for b in bases if name.startswith(b + ".")), None)
            if base:
                full = [base + s for s in self._subs[mtype]]
                return difflib.get_close_matches(name, full, n=n, cutoff=0.5)
        base, _, sub = name.partition(".")
        out = []
        for close in difflib.get_close_matches(base, self.metric_names(), n=n, cutoff=0.7):
            mtype = next(t for t, bs in self._bases.items() if close in bs)
            suffix = f".{sub}" if f".{sub}" in self._subs[mtype] else self._subs[mtype][-1]
            out.append(close + suffix)
        return out


def _key(metrics: Sequence[str]) -> str:
    return "+".join(sorted(set(metrics)))


TABLE = Path(__file__).parent / "data" / "passes_gh100.json"


def load_table(path: Path = TABLE) -> TableCounter:
    """The shipped pass table."""
    return TableCounter(json.loads(path.read_text(encoding="utf-8")))


def record_table(counter: CtypesCounter, chip: str, lists: Sequence[Sequence[str]],
                 sample_metric: dict[str, str]) -> dict[str, Any]:
    """Ask ``counter`` for each metric list's passes, the chip's base metrics and sub-metrics.

    Args:
        counter: a working profiler host.
        chip: CUPTI chip name, e.g. ``GH100``.
        lists: metric lists whose pass counts to record (each single metric, and combinations).
        sample_metric: per metric type, one base metric whose sub-metric list is recorded (CUPTI
            gives the same suffixes for every base metric of a type).
    """
    bases = counter.base_metrics(chip)
    subs = {t: sorted(counter.sub_metrics(chip, m, t)) for t, m in sample_metric.items()}
    rows = []
    for ms in lists:
        n = counter.passes(chip, ms)
        if n is None:
            raise ValueError(f"CUPTI rejects metric list {list(ms)} on {chip}")
        rows.append({"metrics": sorted(ms), "passes": n})
    return {
        "chip": chip,
        "produced_by": {"counter": counter.name, "library": Path(counter.path).name,
                        "cupti": counter.version,
                        "command": "python -m argusdb.observe.planner.profiler_host --record",
                        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
        "lists": rows, "base_metrics": bases, "sub_metrics": subs}
