"""Nsight Compute raw page CSV: every collected metric per profiled kernel (``*.raw.csv``).

Exported with ``ncu -i R.ncu-rep --page raw --csv``. Row 1 names the columns, row 2 holds their
units, and each further row is one profiled kernel launch (a *result*)::

    "ID",...,"Kernel Name",...,"CC","FE_B.TriageCompute.gr__ctas_launched_realtime.sum",...
    "",...,"","",...,"","block",...
    "0",...,"softmax_fwd",...,"9.0","16384.000000",...

Each numeric metric becomes an evidence row whose signal is the Nsight Compute metric name as
printed (``gpu__time_duration.sum``), with the unit of row 2, plus ``duration`` in ns converted
from ``gpu__time_duration.sum``. ``device__attribute_*`` columns describe the GPU and go to the
run's device facts; ``profiler__*`` columns describe the measurement and go to the run's meta
(``profiler__replayer_passes`` is the replay pass count of the interference signature).

Lineage: a value's ``src_row`` is ``line * 65536 + column`` (0-based); the ``duration``
converted from ``gpu__time_duration.sum`` takes column 65535 of its line.

Checks before anything is stored: results have distinct IDs (a repeated one is a concatenated
export), a metric with a unit holds a number or one of ncu's "no value" marks (``-``, ``nan``,
``n/a``, ``no data``) and is not negative, and the compute capability is a known target.

What the raw page cannot state: the section set (``--set full``) and clock and cache control
(``--clock-control``, ``--cache-control``): they are command-line options of the collection,
not metrics. The run records them as unknown (NULL) and lists them under ``not_stated``.

Example:
    >>> art = RawCsvReader().read(Path("softmax.raw.csv"))
    >>> art.target, art.interference.replay_passes
    ('sm_90', 20)
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from argusdb.collectors.base import (
    Artefact,
    Interference,
    evidence_batch,
    launch_shapes,
    open_text,
)
from argusdb.collectors.ncu._values import number
from argusdb.collectors.validate import Unique, known_target
from argusdb.errors import InputError

ADAPTER_VERSION = "ncu.raw_csv/1"
#: Columns of a result that identify it rather than measure it.
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC")
#: src_row = record * SRC_ROW_STRIDE + column (the raw page has ~2,200 columns for --set full).
SRC_ROW_STRIDE = 1 << 16
#: Cells ncu writes where a metric has no value (compared lower-case).
_NO_VALUE = frozenset(("", "-", "nan", "-nan", "n/a", "no data", "inf", "-inf"))
_TIME_UNITS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
               "s": 1e9, "second": 1e9}


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    with open_text(path) as fh:
        rd = csv.reader(fh)
        try:
            for rec in rd:
                if rec:
                    yield rd.line_num - 1, rec
        except csv.Error as exc:
            raise InputError(str(path), f"line {rd.line_num}: malformed CSV ({exc})",
                             "the file is truncated or corrupt; export it again") from exc


def _check_values(path: Path, row_no: int, res: dict[str, str], units: list[str]) -> None:
    """Refuse a word or a negative number where a metric with a unit belongs."""
    for (name, cell), unit in zip(res.items(), units, strict=True):
        if not unit or name in IDENTITY or name.startswith("device__attribute_"):
            continue
        if cell.strip().lower() in _NO_VALUE:
            continue
        v = number(cell)
        if v is None:
            raise InputError(str(path), f"line {row_no + 1}, metric {name} ({unit}): "
                             f"{cell[:40]!r} is not a number", "the file was edited or is "
                             "corrupt; export it again with ncu -i R --page raw --csv")
        if v < 0:
            raise InputError(str(path), f"line {row_no + 1}, metric {name} ({unit}): {cell} is "
                             "negative, and a count, time or size cannot be", "the file was "
                             "edited or is corrupt; export it again with ncu -i R --page raw --csv")


def _value(cell: str) -> Any:
    v = number(cell)
    return cell if v is None else (int(v) if v.is_integer() else v)


class RawCsvReader:
    """``ncu --page raw --csv`` exports."""

    kind = "ncu.raw_csv"

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]
        return (first.startswith(b'"ID","Process ID",') and b'"Section Name"' not in first
                and b"__" in first)

    def _header(self, path: Path) -> tuple[list[str], list[str], Iterator[tuple[int, list[str]]]]:
        rows = _rows(path)
        try:
            _, names = next(rows)
            _, units = next(rows)
        except StopIteration:
            raise InputError(str(path), "ends before its units row", "export it again with "
                             "ncu -i R --page raw --csv") from None
        missing = [c for c in ("Kernel Name", "CC") if c not in names]
        if missing:
            raise InputError(str(path), f"lacks the column(s) {missing}",
                             "pass a complete ncu --page raw --csv export")
        if len(units) != len(names) or any(u.startswith("0x") or u.isdigit() for u in units[:11]):
            raise InputError(str(path), "row 2 is not the units row",
                             "export with ncu -i R --page raw --csv (units are on by default)")
        return names, units, rows

    def _results(self, path: Path) -> Iterator[tuple[int, dict[str, str]]]:
        names, _, rows = self._header(path)
        for row_no, rec in rows:
            if len(rec) != len(names):
                raise InputError(str(path), f"line {row_no + 1} has {len(rec)} fields, the "
                                 f"header has {len(names)}",
                                 "the file is truncated or corrupt; export it again")
            yield row_no, dict(zip(names, rec, strict=True))

    def read(self, path: Path) -> Artefact:
        names, units, _ = self._header(path)
        kernels: list[str] = []
        device: dict[str, Any] = {}
        passes: set[int] = set()
        pcsamp = False
        results = []
        targets: set[str] = set()
        apps: set[str] = set()
        shapes: set[tuple[str, int | None, int | None, int | None]] = set()
        unit_of = dict(zip(names, units, strict=True))
        ids = Unique(path, "result (ID)", lambda n: f"line {n}")
        for row_no, res in self._results(path):
            k = res["Kernel Name"]
            ids.add(res.get("ID"), row_no + 1)
            _check_values(path, row_no, res, units)
            if res.get("Process Name"):
                apps.add(res["Process Name"])
            shared = [_bytes(res.get(f"launch__shared_mem_per_block_{x}", ""),
                             unit_of.get(f"launch__shared_mem_per_block_{x}", ""))
                      for x in ("static", "dynamic")]
            threads, regs = (number(res.get(f"launch__{x}", ""))
                             for x in ("block_size", "registers_per_thread"))
            shapes.add((k, int(threads) if threads is not None else None,
                        int(regs) if regs is not None else None,
                        round(sum(x for x in shared if x is not None))
                        if any(x is not None for x in shared) else None))
            results.append({"id": res.get("ID"), "kernel": k, "launch": kernels.count(k),
                            "row": row_no})
            kernels.append(k)
            major = res.get("device__attribute_compute_capability_major")
            minor = res.get("device__attribute_compute_capability_minor")
            cc = f"{major}.{minor}" if major and minor else res["CC"]
            if (t := known_target(path, cc, "compute capability")) is not None:
                targets.add(t)
            if known_target(path, res["CC"], "compute capability (CC)") not in (None, t):
                raise InputError(str(path), f"line {row_no + 1}: CC {res['CC']} contradicts the "
                                 f"device attributes' compute capability {cc}", "the file was "
                                 "edited or is corrupt; export it again")
            if not device:
                device = {"name": res.get("device__attribute_display_name"), "cc": cc}
                device.update({n.removeprefix("device__attribute_"): _value(v)
                               for n, v in res.items() if n.startswith("device__attribute_")})
            if (p := number(res.get("profiler__replayer_passes", ""))) is not None:
                passes.add(int(p))
            pcsamp = pcsamp or bool(number(res.get("smsp__pcsamp_aggregated_passes", "")))
        ids.check()
        if not results:
            raise InputError(str(path), "holds no profiled kernel (only the header rows)",
                             "profile at least one kernel and export it again")
        if len(targets) > 1:
            raise InputError(str(path), f"mixes GPUs of targets {sorted(targets)}",
                             "export one device per file (ncu -i R --devices N)")
        profiler = {n: u for n, u in zip(names, units, strict=True) if n.startswith("profiler__")}
        return Artefact(
            path=str(path), collector="ncu", kind=self.kind, tool="Nsight Compute",
            adapter_version=ADAPTER_VERSION, export_schema="page=raw",
            batches=lambda: self._batches(path, units),
            interference=Interference(counter_replay=True,
                                      replay_passes=max(passes) if passes else None,
                                      pc_sampling=pcsamp),
            target=targets.pop() if targets else None, device=device,
            kernels=sorted(set(kernels)),
            meta={"application": apps.pop() if len(apps) == 1 else None,
                  "launch_shape": launch_shapes(shapes),
                  "results": results, "replay_passes_per_result": sorted(passes),
                  "profiler_metrics": sorted(profiler), "src_row_stride": SRC_ROW_STRIDE,
                  "not_stated": ["section_set", "clock_control", "cache_control",
                                 "tool_version"],
                  "note": "section set, clock and cache control are ncu command-line options "
                          "the raw page does not state"})

    def _batches(self, path: Path, units: list[str]) -> Iterator[tuple[str, pa.RecordBatch]]:
        seen: dict[str, int] = {}
        for row_no, res in self._results(path):
            k = res["Kernel Name"]
            launch = seen.get(k, 0)
            seen[k] = launch + 1
            ev: dict[str, list[Any]] = {c: [] for c in ("signal", "value", "unit", "src_row")}
            for col, ((name, cell), unit) in enumerate(zip(res.items(), units, strict=True)):
                if name in IDENTITY or name.startswith(("device__attribute_", "profiler__")):
                    continue
                v = number(cell)
                if v is None:
                    continue
                ev["signal"].append(name)
                ev["value"].append(v)
                ev["unit"].append(unit or None)
                ev["src_row"].append(row_no * SRC_ROW_STRIDE + col)
                if name == "gpu__time_duration.sum":
                    if unit not in _TIME_UNITS:
                        raise InputError(str(path), f"gpu__time_duration.sum has unit {unit!r}",
                                         "export with ncu's default units (--print-units base "
                                         "or auto)")
                    ev["signal"].append("duration")
                    ev["value"].append(v * _TIME_UNITS[unit])
                    ev["unit"].append("ns")
                    ev["src_row"].append(row_no * SRC_ROW_STRIDE + SRC_ROW_STRIDE - 1)
            n = len(ev["signal"])
            ev["kernel"] = [k] * n
            ev["launch"] = [str(launch)] * n
            yield "evidence", evidence_batch(ev)


#: Byte multiples of the raw page's memory units ('Kbyte/block' is 1000 bytes per block).
_BYTE_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9}


def _bytes(cell: str, unit: str) -> float | None:
    """A raw-page memory value in bytes (its unit row says 'byte/block', 'Kbyte/block', ...)."""
    v = number(cell)
    scale = _BYTE_UNITS.get(unit.split("/", 1)[0].strip().lower())
    return None if v is None or scale is None else v * scale
