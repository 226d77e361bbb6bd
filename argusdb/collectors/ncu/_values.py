"""Numbers as Nsight Compute prints them in CSV exports, parsed column-wise with Arrow.

ncu writes ``-`` (or an empty cell) where a metric does not apply, thousands separators in the
raw and details pages (``16,384``), ``nan`` for undefined ratios and words (``no data``,
``PolicySpread``) for categorical metrics. Only finite numbers become evidence.

Example:
    >>> numeric(pa.array(["1,024", "-", "2.5", "nan"])).to_pylist()
    [1024.0, None, 2.5, None]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from argusdb.schema.arrowvalues import strings

_NOT_A_VALUE = strings(["-", "", "n/a", "N/A", "nan", "NaN", "inf", "-inf", "..."])


def number(text: str) -> float | None:
    """One cell → a finite float, or None when it is not a number."""
    try:
        v = float(text.replace(",", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def numeric(cells: pa.Array | Sequence[str]) -> pa.Array:
    """A column of cells → float64 with NULL where a cell is not a finite number.

    The fast path is one Arrow cast; a column mixing numbers and words falls back to a per-cell
    parse (rare: categorical columns are dropped whole by the readers).
    """
    arr = cells if isinstance(cells, pa.Array) else pa.array(cells, pa.string())
    arr = pc.if_else(pc.is_in(arr, value_set=_NOT_A_VALUE), pa.scalar(None, pa.string()), arr)
    if pc.any(pc.match_substring(arr, ",")).as_py():
        arr = pc.replace_substring(arr, ",", "")
    try:
        return pc.cast(arr, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if c is None else number(c) for c in arr.to_pylist()],
                        pa.float64())
