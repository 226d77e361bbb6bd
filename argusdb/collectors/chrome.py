"""Streaming helpers for Chrome trace-event JSON (Kineto and Proton write it).

A Chrome trace is ``{"traceEvents": [...], ...}`` or a bare ``[...]`` of events; ``ts`` and
``dur`` are in microseconds whatever ``displayTimeUnit`` says (that key only sets the viewer's
display). Events are streamed with ijson's C backend, so memory holds one event at a time, and
numbers arrive as :class:`decimal.Decimal`: microseconds convert to integer nanoseconds exactly
(``2413669097444.592`` µs is ``2413669097444592`` ns, with no float rounding).

Example:
    >>> kernels = [ev for i, ev in iter_events(Path("trace.json.gz"))
    ...            if ev.get("cat") == "kernel"]
    >>> all(us_to_ns(ev["dur"]) > 0 for ev in kernels), len(kernels) > 0
    (True, True)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import IO, Any

import ijson

from argusdb.collectors.base import BOM, open_stream
from argusdb.errors import InputError

_THOUSAND = Decimal(1000)
#: Bytes ijson reads at a time. Its C backend turns a whole chunk into Python events before
#: yielding them, so this bounds a transient (~20x the chunk); 64 KiB cost 1.1 MB, 16 KiB 0.3 MB.
BUF_SIZE = 16 * 1024


def open_binary(path: Path) -> IO[bytes]:
    """Open a possibly gzip-compressed file for binary reading (ijson wants bytes), past a
    UTF-8 byte-order mark if the text starts with one."""
    fh2 = open_stream(path)   # a gzip stream inflates within bounds (a bomb is refused)
    try:
        if fh2.read(len(BOM)) != BOM:
            fh2.seek(0)
    except (OSError, EOFError, zlib.error):
        fh2.seek(0)  # a corrupt gzip stream: the reader reports it where it reads
    return fh2


def us_to_ns(value: Any) -> int | None:
    """Microseconds (int, Decimal or str as the trace has them) → integer nanoseconds.

    Sub-nanosecond digits are rounded half-even; ``None`` stays ``None``.

    Example:
        >>> us_to_ns(Decimal("1.76"))
        1760
    """
    if value is None:
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):  # never produced by ijson; kept exact via its repr
        value = Decimal(repr(value))
    return int((Decimal(value) * _THOUSAND).to_integral_value(ROUND_HALF_EVEN))


@contextmanager
def read_errors(path: Path, kind: str) -> Iterator[None]:
    """Turn the ways a JSON(.gz) stream breaks into an :class:`InputError` naming the file."""
    try:
        yield
    except ijson.IncompleteJSONError as exc:
        # yajl appends a multi-line excerpt with a caret (as bytes): keep its first line.
        msg = exc.args[0] if exc.args else ""
        msg = msg.decode("utf-8", "replace") if isinstance(msg, bytes) else str(msg)
        why = msg.strip().splitlines()[0] if msg.strip() else "no detail"
        if "invalid bytes in UTF8" in why:
            raise InputError(str(path), f"is not valid UTF-8 ({why})", "re-export the trace "
                             "from the tool (argus reads UTF-8 JSON, with or without a "
                             "byte-order mark); an edited or re-encoded file is refused rather "
                             "than guessed") from exc
        raise InputError(str(path), f"the {kind} JSON ends early or is malformed ({why})",
                         "the file is truncated or corrupt; export the trace again") from exc
    except ijson.JSONError as exc:
        raise InputError(str(path), f"is not valid {kind} JSON ({exc})",
                         "export the trace again") from exc
    except (EOFError, zlib.error) as exc:
        raise InputError(str(path), f"the gzip stream ends early or is corrupt ({exc})",
                         "the file is truncated; copy or export it again") from exc
    except OSError as exc:  # gzip.BadGzipFile, CRC errors
        raise InputError(str(path), f"cannot be decompressed ({exc})",
                         "the file is truncated or corrupt; copy or export it again") from exc


def events_prefix(head: bytes) -> str:
    """The ijson prefix of the events: ``traceEvents.item`` or ``item`` for a bare array."""
    return "item" if head.lstrip().startswith(b"[") else "traceEvents.item"


def iter_events(path: Path, kind: str = "Chrome trace") -> Iterator[tuple[int, dict[str, Any]]]:
    """Stream ``(index, event)`` pairs of a Chrome trace, one event in memory at a time.

    Raises:
        InputError: the file is truncated, not JSON, or not gzip where it claims to be.
    """
    with read_errors(path, kind), open_binary(path) as fh:
        head = fh.peek(64)[:64] if hasattr(fh, "peek") else b""
        prefix = events_prefix(head)
        for i, ev in enumerate(ijson.items(fh, prefix, buf_size=BUF_SIZE)):
            if isinstance(ev, dict):
                yield i, ev
