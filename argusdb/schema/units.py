"""Units that decide how a value is compared: timing units (a value that is a time) and units
counted by a sampler. Shared by the checker's metadata, the API's summary and the answers,
here so that an answer reads them without loading the checker (and sqlglot).

Example:
    >>> "ns" in TIMING_UNITS, SAMPLED_UNITS
    (True, ('samples',))
"""

from __future__ import annotations

#: Units of values counted by a sampler (see ``_sampler`` in :mod:`argusdb.checker.metadata`).
SAMPLED_UNITS = ("samples",)
#: Units of timing values (ours and the tools' own spellings).
TIMING_UNITS = ("ns", "us", "ms", "s", "nsecond", "usecond", "msecond", "second", "cycle",
                "cycles")
