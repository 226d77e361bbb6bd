"""Arrow values to and from Python and NumPy without PyArrow's pandas conversions.

``pa.array([...])`` and ``pa.scalar(...)`` (and a Python value handed to a compute function)
first ask whether the value is a pandas object, and ``Array.to_numpy()`` goes through the
pandas conversion: both import pandas, ~0.4 s CPU, a third of a small answer's command.
Answers build the few strings they compare with here, from buffers, and read numeric columns
as NumPy views of their buffers (:func:`numbers`).

Example:
    >>> strings(["observed", None, "derived"]).to_pylist()
    ['observed', None, 'derived']
    >>> string("observed").as_py()
    'observed'
    >>> numbers(pa.chunked_array([pa.nulls(0, pa.int64())])).dtype
    dtype('int64')
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pyarrow as pa

#: A null string scalar (``pc.if_else(mask, values, NULL)``).
NULL = pa.nulls(1, pa.string())[0]


def strings(values: Sequence[str | None]) -> pa.Array:
    """A ``string`` array of ``values`` (None: null)."""
    data = [b"" if v is None else str(v).encode() for v in values]
    offsets = [0]
    for d in data:
        offsets.append(offsets[-1] + len(d))
    nulls = sum(v is None for v in values)
    validity = None
    if nulls:
        bits = bytearray((len(values) + 7) // 8)
        for i, v in enumerate(values):
            if v is not None:
                bits[i // 8] |= 1 << (i % 8)
        validity = pa.py_buffer(bytes(bits))
    return pa.Array.from_buffers(
        pa.string(), len(values),
        [validity, pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)),
         pa.py_buffer(b"".join(data))], null_count=nulls)


def string(value: str) -> pa.Scalar:
    """A ``string`` scalar of ``value``."""
    return strings([value])[0]


def indices(values: np.ndarray) -> pa.Array:
    """An ``int64`` array of NumPy integers (row numbers for ``take``), from their buffer:
    ``pa.array`` of a NumPy array would import pandas first."""
    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


#: NumPy types of the fixed-width Arrow types :func:`numbers` reads from buffers.
_NUMPY = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
          "float": np.float32, "double": np.float64}


def numbers(col: pa.Array | pa.ChunkedArray, fill: float | None = None) -> np.ndarray:
    """A numeric column as a NumPy array, as ``to_numpy()`` gives it (read-only, zero-copy for
    one chunk without nulls); with ``fill``, its nulls replaced by ``fill`` (as
    ``col.fill_null(fill).to_numpy()``). Other columns through ``to_numpy`` itself."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    dtype = _NUMPY.get(str(arr.type))
    if dtype is None or (arr.null_count and fill is None):
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    validity, data = arr.buffers()[:2]
    if data is None:  # an empty array may have no buffer
        return np.zeros(0, dtype=dtype)
    values = np.frombuffer(data, dtype=dtype, count=len(arr),
                           offset=arr.offset * np.dtype(dtype).itemsize)
    if not arr.null_count:
        return values
    valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return np.where(valid[arr.offset:arr.offset + len(arr)].astype(bool), values,
                    np.asarray(fill, dtype=dtype))


class _RefusePandas:
    """A finder that refuses ``pandas`` (see :func:`without_pandas`)."""

    @staticmethod
    def find_spec(name: str, *_: object) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not loaded by this command", name=name)


@contextmanager
def without_pandas() -> Iterator[None]:
    """Within the block, pandas cannot be imported, so PyArrow does not load it (~0.3 s CPU:
    a third of a one-file ``argus ingest``). Building an array from a Python list
    (``pa.array``: the collectors call it hundreds of times an artefact) first asks whether
    the value is a pandas object, and PyArrow's C++ layer imports pandas for that question,
    again at each call until it once succeeds; inside the block each ask fails at once and the
    array is built as without pandas installed. For a command handed no pandas objects (the
    ingest command, whose collectors read files); a no-op where pandas is loaded already.
    After the block pandas imports as usual."""
    import sys

    if "pandas" in sys.modules:
        yield
        return
    finder = _RefusePandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
