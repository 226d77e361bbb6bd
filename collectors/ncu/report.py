"""Nsight Compute reports (``*.ncu-rep``): readable only through Nsight Compute's own reader.

The report is a binary protobuf container (it starts with ``NVR\\0``) whose layout NVIDIA does
not document; the supported way to read it is the ``ncu_report`` Python module shipped in
``<nsight-compute>/extras/python``. Where that module is not importable, ingesting a report ends
with an InputError that says how to export the pages argusdb reads (the source page for
per-instruction evidence, the raw page for per-kernel metrics, replay passes and the device).

Example:
    >>> NcuRepReader().read(Path("softmax.ncu-rep"))
    Traceback (most recent call last):
    argusdb.errors.InputError: softmax.ncu-rep: is an Nsight Compute report ...
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from argusdb.errors import InputError
from collectors.base import Artefact

MAGIC = b"NVR\x00"


class NcuRepReader:
    """``*.ncu-rep`` binary reports."""

    kind = "ncu.report"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, path: Path) -> Artefact:
        stem = path.name.removesuffix(".ncu-rep")
        export = (f"export it with `ncu -i {path.name} --page source --csv --print-source "
                  f"cuda,sass > {stem}.source.csv` and `ncu -i {path.name} --page raw --csv > "
                  f"{stem}.raw.csv` and ingest those")
        if importlib.util.find_spec("ncu_report") is None:
            raise InputError(str(path), "is an Nsight Compute report (.ncu-rep), a binary format "
                             "only Nsight Compute's own Python reader (ncu_report) can read, "
                             "and ncu_report is not installed here", export)
        # ncu_report is installed, but argusdb reads reports through the CSV pages so both paths
        # give identical evidence; reading the report directly is not implemented yet.
        raise InputError(str(path), "is an Nsight Compute report; argusdb reads its CSV pages, "
                         "not the report itself", export)


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
