"""Nsight Compute (``ncu``) exports.

- :mod:`collectors.ncu.source_csv`: the source page (``--page source --csv --print-source
  cuda,sass``): per-SASS-instruction counts and warp-stall samples by reason.
- :mod:`collectors.ncu.raw_csv`: the raw page (``--page raw --csv``): every metric per profiled
  kernel with units, device attributes and the replay pass count.
- :mod:`collectors.ncu.report`: ``.ncu-rep`` reports, which need Nsight Compute's own reader;
  details pages (``--page details --csv``), which are refused in favour of the raw page.

Every ncu run is a counter-replay run: its durations are not clean timings.
"""

from __future__ import annotations

from argusdb.collectors.ncu.raw_csv import RawCsvReader
from argusdb.collectors.ncu.report import DetailsCsvRefusal, NcuRepReader
from argusdb.collectors.ncu.source_csv import SourceCsvReader

READERS = [SourceCsvReader(), RawCsvReader(), NcuRepReader(), DetailsCsvRefusal()]
