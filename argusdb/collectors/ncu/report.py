"""Nsight Compute reports (``*.ncu-rep``), read through Nsight Compute itself.

The report is a binary container (it starts with ``NVR\\0``) whose layout NVIDIA does not
document. Where Nsight Compute is installed, the reader asks it for the two pages argusdb reads
(``ncu -i R --page source --csv --print-source cuda,sass`` and ``ncu -i R --page raw --csv``)
and reads those with :mod:`collectors.ncu.source_csv` and :mod:`collectors.ncu.raw_csv`, so a
report and its exported pages give the same evidence (checked with Nsight Compute 2025.3.1 on
the H200 machine: both commands reproduce the shipped ``*.source.csv``/``*.raw.csv`` byte for
byte from ``tests/data/ncu/*.ncu-rep``). The two pages become one run: the raw
page supplies the replay pass count, device and target the source page lacks. Raw-page values
take ``src_row`` ordinals from ``2**31`` on so they never meet the source page's. Where
Nsight Compute is not installed, ingesting a report ends with an InputError that gives the
export commands to run where it is.

Example:
    >>> art = NcuRepReader().read(Path("softmax.ncu-rep"))  # doctest: +SKIP
    >>> art.interference.replay_passes, sorted({t for t, _ in art.batches()})  # doctest: +SKIP
    (38, ['evidence', 'instruction'])
"""

from __future__ import annotations

import atexit
import glob
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from argusdb.collectors.base import Artefact
from argusdb.collectors.ncu.raw_csv import RawCsvReader
from argusdb.collectors.ncu.source_csv import SourceCsvReader
from argusdb.errors import InputError

MAGIC = b"NVR\x00"
#: Raw-page values of a report are numbered from here (source-page values stay below).
RAW_SRC_ROW_BASE = 1 << 31
#: Where Nsight Compute lives when ``ncu`` is not on PATH.
NCU_GLOBS = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
             "/usr/local/cuda-*/bin/ncu")
_TIMEOUT_S = 600


def find_ncu() -> str | None:
    """Path of the ``ncu`` executable, or None where Nsight Compute is not installed."""
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in NCU_GLOBS:
        for cand in sorted(glob.glob(pattern), reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    return None


def _export_fix(path: Path) -> str:
    stem = path.name.removesuffix(".ncu-rep")
    return (f"export it with `ncu -i {path.name} --page source --csv --print-source cuda,sass > "
            f"{stem}.source.csv` and `ncu -i {path.name} --page raw --csv > {stem}.raw.csv` "
            "where Nsight Compute is installed, and ingest those")


def _ncu(path: Path, ncu: str, args: list[str], out: Path | None) -> str:
    """Run ``ncu`` (its stdout to ``out`` when given); failures become InputError."""
    try:
        if out is None:
            done = subprocess.run([ncu, *args], capture_output=True, text=True,
                                  timeout=_TIMEOUT_S, check=False)
        else:
            with open(out, "w") as fh:
                done = subprocess.run([ncu, *args], stdout=fh, stderr=subprocess.PIPE,
                                      text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(str(path), f"running {ncu} failed ({exc})",
                         "check the Nsight Compute installation, or " + _export_fix(path)) from exc
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no message"]
        raise InputError(str(path), f"`ncu {' '.join(args)}` exited with {done.returncode} "
                         f"({tail[0]})", "check that the report is complete and that this "
                         "Nsight Compute version opens it (a report opens in its own or a newer "
                         "version)")
    return done.stdout if out is None else ""


class NcuRepReader:
    """``*.ncu-rep`` binary reports, exported through the installed ``ncu``."""

    kind = "ncu.report"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, path: Path) -> Artefact:
        ncu = find_ncu()
        if ncu is None:
            raise InputError(str(path), "is an Nsight Compute report (.ncu-rep), a binary format "
                             "only Nsight Compute can read, and Nsight Compute (ncu) is not "
                             "installed here", _export_fix(path))
        tmp = Path(tempfile.mkdtemp(prefix="argus-ncu-"))
        atexit.register(shutil.rmtree, tmp, True)  # also when batches() is never consumed
        src_csv, raw_csv = tmp / "report.source.csv", tmp / "report.raw.csv"
        _ncu(path, ncu, ["-i", str(path), "--page", "source", "--csv", "--print-source",
                         "cuda,sass"], src_csv)
        _ncu(path, ncu, ["-i", str(path), "--page", "raw", "--csv"], raw_csv)
        version = re.search(r"Version\s+(\S+)", _ncu(path, ncu, ["--version"], None))
        src = SourceCsvReader().read(src_csv)
        raw = RawCsvReader().read(raw_csv)
        if set(src.kernels) != set(raw.kernels):
            raise InputError(str(path), f"its source page names kernels {src.kernels}, its raw "
                             f"page {raw.kernels}", "export one kernel per report")
        not_stated = [k for k in raw.meta["not_stated"] if k != "tool_version" or not version]
        return Artefact(
            path=str(path), collector="ncu", kind=self.kind, tool="Nsight Compute",
            adapter_version="ncu.report/1", tool_version=version.group(1) if version else None,
            export_schema="ncu -i: page=source,print-source=cuda,sass + page=raw",
            batches=lambda: self._batches(tmp, src, raw),
            interference=raw.interference, target=raw.target, device=raw.device,
            kernels=raw.kernels, source_refs=src.source_refs,
            meta={"source_page": src.meta, "raw_page": raw.meta, "not_stated": not_stated,
                  "raw_src_row_base": RAW_SRC_ROW_BASE})

    @staticmethod
    def _batches(tmp: Path, src: Artefact, raw: Artefact
                 ) -> Iterator[tuple[str, pa.RecordBatch]]:
        try:
            yield from src.batches()
            for table, batch in raw.batches():
                i = batch.schema.get_field_index("src_row")
                yield table, batch.set_column(i, "src_row",
                                              pc.add(batch["src_row"], RAW_SRC_ROW_BASE))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class DetailsCsvRefusal:
    """``ncu --page details --csv``: recognised, and refused with the export that works.

    The details page repeats raw-page metrics under display names ("Duration", "Memory
    Throughput") rounded for reading, plus rule advice; ingesting it beside the raw page would
    store the same measurement twice under two names.
    """

    kind = "ncu.details_csv"

    def sniff(self, path: Path, head: bytes) -> bool:
        first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]
        return first.startswith(b'"ID","Process ID",') and b'"Section Name","Metric Name"' in first

    def read(self, path: Path) -> Artefact:
        raise InputError(str(path), "is an Nsight Compute details page: display names and "
                         "rounded values of metrics the raw page holds exactly",
                         "export the raw page of the same report (ncu -i R.ncu-rep --page raw "
                         "--csv > R.raw.csv) and ingest that")
