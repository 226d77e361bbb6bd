"""JSON text of every answer: strict RFC 8259, which has no NaN or Infinity.

Python's :func:`json.dumps` writes ``NaN``, ``Infinity`` and ``-Infinity`` for non-finite floats
(a p-value with fewer than two repeats, a ratio whose base median is 0, a DOUBLE column of a
query). ``JSON.parse``, Go's ``encoding/json`` and most agents' parsers refuse that text. An
answer writes them as ``null``; the verdict or note beside the number says why it is missing.
The common case pays one ``dumps`` with ``allow_nan=False``; only a document that holds a
non-finite float is walked and written again.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any


def finite(doc: Any) -> Any:
    """``doc`` with every non-finite float (at any depth of dicts, lists and tuples) as None."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [finite(v) for v in doc]
    return doc


def dumps(doc: Any, **kw: Any) -> str:
    """``json.dumps(doc, **kw)`` as strict JSON: non-finite floats written as ``null``."""
    try:
        return json.dumps(doc, allow_nan=False, **kw)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
    return json.dumps(finite(doc), allow_nan=False, **kw)


def dump(doc: Any, fh: IO[str], **kw: Any) -> None:
    """:func:`dumps` to a seekable text file, streamed (a trace export can be large): a
    document with a non-finite float is written again from the start, as ``null``."""
    start = fh.tell()
    try:
        json.dump(doc, fh, allow_nan=False, **kw)
        return
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
    fh.seek(start)
    fh.truncate()
    json.dump(finite(doc), fh, allow_nan=False, **kw)
