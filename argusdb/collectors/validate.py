"""Checks every reader applies to what it reads: one home for each plausibility rule.

A reader refuses an artefact (:class:`~argusdb.errors.InputError`: the file, the problem, the
fix) rather than store a part of it or a number that cannot be a measurement. The rules here
are the ones several formats share:

- **text**: UTF-8, with or without a byte-order mark (:func:`collectors.base.open_text`); an
  invalid byte is refused with its line, never replaced;
- **timestamps and durations**: integers (or exact decimals) in nanoseconds, inside the signed
  64-bit range the store keeps, ``end >= start``, and no single interval longer than
  :data:`MAX_INTERVAL_NS` (:func:`ns_timestamp`, :func:`interval`);
- **counts and sizes**: integers in a column's range (:func:`int_field`), finite non-negative
  measurements (:func:`measurement`);
- **duplicates**: a record that repeats another exactly (:class:`Unique`): a tool never writes
  the same launch or event twice, so a repeat means a concatenated or replayed file;
- **GPU targets** from the set of CUDA targets that exist (:data:`KNOWN_TARGETS`,
  :func:`known_target`), and ``--option`` keys and values of a small grammar
  (:func:`check_options`), so that a typo or an injected string never becomes part of a
  program version;
- **one ingest, several artefacts**: a source page and a SASS listing of the same kernel must
  list the same number of instructions (:func:`cross_check`).

Example:
    >>> known_target("t.ttgir", "cuda:90")
    'sm_90'
    >>> check_options({"num_warps": "4", "target": "sm_90a"})
    {'num_warps': '4', 'target': 'sm_90a'}
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Hashable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from argusdb.collectors.base import Artefact, normalize_target
from argusdb.errors import InputError, UsageError

INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
#: Longest single interval (a kernel, a scope instance, a host op) taken as a measurement:
#: 7 days. A longer one is a corrupt timestamp (an ``end`` of 1e18 ns past its start), not a run.
MAX_INTERVAL_NS = 7 * 24 * 3600 * 10**9

#: CUDA GPU targets (compute capabilities) that exist, as ``sm_XY``. A target outside this set
#: is a typo or a corrupt artefact; ``sm_90a``/``sm_100f`` normalize to their base target.
KNOWN_TARGETS = frozenset(f"sm_{cc}" for cc in (
    30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103,
    110, 120, 121))

_TARGETS_TEXT = "sm_30 … sm_121, e.g. sm_80, sm_90, sm_100"


# ---------------------------------------------------------------------------------------------
# numbers


def _where(where: str) -> str:
    return f"{where}: " if where else ""


def int_field(path: str | Path, where: str, name: str, value: Any, lo: int = 0,
              hi: int = INT64_MAX, required: bool = False) -> int | None:
    """An integer field of a record, checked to be an integer in ``[lo, hi]``.

    ``None`` (absent) passes unless ``required``. Exact decimals (``16384.0``) pass as integers.

    Raises:
        InputError: a string, a boolean, a fraction, a non-finite or out-of-range number.
    """
    if value is None:
        if required:
            raise InputError(str(path), f"{_where(where)}'{name}' is missing",
                             "the file is truncated or corrupt; record it again")
        return None
    v = _as_int(value)
    if v is None:
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}, not an integer",
                         "the file is corrupt or was edited; record it again")
    if not lo <= v <= hi:
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}, outside "
                         f"[{lo}, {hi}]", "the file is corrupt or was edited; record it again")
    return v


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float | Decimal):
        try:
            if not math.isfinite(value) or value != int(value):
                return None
        except (OverflowError, ValueError, InvalidOperation):
            return None
        return int(value)
    return None


def _show(value: Any) -> str:
    text = repr(str(value)) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def ns_timestamp(path: str | Path, where: str, name: str, value: Any) -> int:
    """A nanosecond timestamp: a non-negative integer that fits the store's 64-bit columns."""
    v = int_field(path, where, name, value, 0, INT64_MAX, required=True)
    assert v is not None
    return v


def us_to_ns(path: str | Path, where: str, name: str, value: Any,
             lo: int = -INT64_MAX) -> int:
    """A microsecond number of a Chrome trace (int or exact decimal) → integer nanoseconds.

    Raises:
        InputError: the value is absent, a string, not finite, or out of the 64-bit range.
    """
    if value is None:
        raise InputError(str(path), f"{_where(where)}'{name}' is missing",
                         "the trace is truncated or corrupt; export it again")
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}, not a number "
                         "of microseconds", "the trace is corrupt or was edited; export it again")
    try:
        d = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        if not d.is_finite():
            raise InvalidOperation
        ns = int((d * 1000).to_integral_value())
    except (InvalidOperation, OverflowError, ValueError):
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}, not a finite "
                         "number", "the trace is corrupt; export it again") from None
    if ns < 0 <= lo:
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)} µs: a duration "
                         "cannot be negative", "the trace is corrupt or was edited; export it "
                         "again")
    if not lo <= ns <= INT64_MAX:
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)} µs, outside the "
                         "range of a 64-bit nanosecond clock", "the trace is corrupt or was "
                         "edited; export it again")
    return ns


def interval(path: str | Path, where: str, start: int, end: int) -> int:
    """The duration of ``[start, end]`` in ns, refused when negative or implausibly long."""
    if end < start:
        raise InputError(str(path), f"{_where(where)}ends before it starts (start {start}, end "
                         f"{end}: {end - start} ns)", "the file is corrupt or was edited; "
                         "record it again")
    if end - start > MAX_INTERVAL_NS:
        raise InputError(str(path), f"{_where(where)}lasts {end - start} ns (more than 7 days): "
                         "not a measurement", "the file is corrupt or was edited; record it again")
    return end - start


def measurement(path: str | Path, where: str, name: str, value: Any,
                signed: bool = False) -> float:
    """A measured value: a finite number, non-negative unless ``signed``."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}, not a number",
                         "the file is corrupt or was edited; record it again")
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}, not a finite "
                         "number", "the file is corrupt or was edited; record it again")
    if v < 0 and not signed:
        raise InputError(str(path), f"{_where(where)}'{name}' is {_show(value)}: a count, "
                         "time or size cannot be negative", "the file is corrupt or was edited; "
                         "record it again")
    return v


class Unique:
    """Detects a record that repeats an earlier one exactly, in 16 bytes per record.

    Records are remembered by a 64-bit hash of their key and their ordinal (compact arrays, as
    :class:`collectors.kineto.hostops.LaunchIndex` keeps its index), and compared once, by a
    sort, in :meth:`check`.

    Example:
        >>> u = Unique("k.jsonl", "kernel record", lambda n: f"line {n}")
        >>> u.add(("k", 1, 2), 3); u.add(("k", 1, 2), 9)
        >>> u.check()
        Traceback (most recent call last):
        ...
        argusdb.errors.InputError: k.jsonl: line 9: this kernel record repeats line 3 ...
    """

    def __init__(self, path: str | Path, what: str, label: Callable[[int], str]) -> None:
        self.path, self.what, self.label = str(path), what, label
        self._keys = array("q")
        self._at = array("q")

    def add(self, key: Hashable, at: int) -> None:
        """Remember a record by its key and ordinal (a line, an event index)."""
        self._keys.append(hash(key))
        self._at.append(at)

    def check(self) -> None:
        """Refuse the first record (by ordinal) that repeats an earlier one."""
        if len(self._keys) < 2:
            return
        keys = np.frombuffer(self._keys, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        same = np.nonzero(keys[order][1:] == keys[order][:-1])[0]
        if not len(same):
            return
        at = np.frombuffer(self._at, dtype=np.int64)
        second = at[order[same + 1]]
        j = int(np.argmin(second))
        first = int(at[order[same[j]]])
        raise InputError(self.path, f"{self.label(int(second[j]))}: this {self.what} repeats "
                         f"{self.label(first)} exactly (a tool never records one launch or event "
                         "twice: the file was concatenated or duplicated)", "ingest the original "
                         "recording, or remove the repeated records")


# ---------------------------------------------------------------------------------------------
# targets and options


def known_target(path: str | Path, value: Any, what: str = "GPU target") -> str | None:
    """Normalize a target an artefact states (``cuda:90``, ``sm_90a``, ``9.0``, ``90``) and
    refuse one that is not a CUDA target that exists. ``None`` or ``''`` → ``None``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    t = normalize_target(str(value))
    if t not in KNOWN_TARGETS:
        raise InputError(str(path), f"states the {what} {_show(value)}, which is not a known "
                         f"CUDA target ({_TARGETS_TEXT})", "the file is corrupt or was edited; "
                         "record it again from the compiler or tool")
    return t


#: ``--option`` keys: an identifier (dots and dashes allowed inside), at most 64 characters.
_OPTION_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")
#: ``--option`` values: a number, a name, a version or a short list (``16,16``): no spaces,
#: quotes, semicolons or other punctuation a shell or SQL would read.
_OPTION_VALUE = re.compile(r"[A-Za-z0-9_.:+\-/,()\[\]]{1,128}")
#: Options whose values have a narrower grammar: compile options that are positive integers.
_POSITIVE_INT_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``--option`` keys and values against their grammar; return them unchanged.

    ``target`` must be a known GPU target; ``num_warps``, ``num_stages``, ``num_ctas`` and
    ``maxnreg`` positive integers; any other key an identifier and any value a token of
    letters, digits and ``_ . : + - / , ( ) [ ]``.

    Raises:
        UsageError: naming the option, what is wrong and an example that works.
    """
    for key, raw in options.items():
        if raw is None and key == "target":
            continue  # the library's "no target given"
        value = str(raw)
        if not isinstance(key, str) or not _OPTION_KEY.fullmatch(key):
            raise UsageError(f"--option {key!s}={value}: the key {key!r} is not an identifier "
                             "(letters, digits, '_', '.', '-'; at most 64 characters), e.g. "
                             "--option num_warps=4")
        if key == "target":
            t = normalize_target(value)
            if t not in KNOWN_TARGETS:
                raise UsageError(f"--option target={value!r}: not a known CUDA target "
                                 f"({_TARGETS_TEXT}); give one, e.g. --option target=sm_90")
            continue
        if key in _POSITIVE_INT_OPTIONS:
            if not (value.isdigit() and value.isascii() and 0 < int(value) <= 1 << 16):
                raise UsageError(f"--option {key}={value!r}: {key} is a positive integer, "
                                 f"e.g. --option {key}=4")
            continue
        if not _OPTION_VALUE.fullmatch(value):
            raise UsageError(f"--option {key}={value!r}: the value is not a plain token "
                             "(letters, digits and _ . : + - / , ( ) [ ]; no spaces, quotes or "
                             "';'), e.g. --option triton=3.6.0")
    return dict(options)


# ---------------------------------------------------------------------------------------------
# several artefacts of one ingest


def cross_check(arts: Sequence[Artefact]) -> None:
    """Check artefacts ingested together against each other.

    A source page (``ncu.source_csv``/``ncu.report``) and a SASS listing (``nvdisasm.sass``) of
    the same kernel must list the same number of instructions: a listing cut short, or a page of
    another build, would otherwise attribute measurements to the wrong instructions.

    Raises:
        InputError: naming the two files, the kernel and both counts.
    """
    listings: dict[str, tuple[str, int]] = {}
    pages: dict[str, tuple[str, int]] = {}
    for a in arts:
        counts = a.meta.get("instructions_per_kernel")
        if a.kind == "ncu.report":
            counts = (a.meta.get("source_page") or {}).get("instructions_per_kernel")
        if not isinstance(counts, dict):
            continue
        into = listings if a.kind == "nvdisasm.sass" else pages
        for k, n in counts.items():
            into.setdefault(k, (a.path, int(n)))
    for k, (page, n_page) in sorted(pages.items()):
        if k in listings and listings[k][1] != n_page:
            sass, n_sass = listings[k]
            raise InputError(page, f"lists {n_page} instructions of kernel {k}, but {sass} "
                             f"lists {n_sass}", "ingest the source page and the SASS listing of "
                             "the same build, each complete (nvdisasm -g -gi -c K.cubin of the "
                             "profiled cubin)")


# ---------------------------------------------------------------------------------------------
# structure of text formats

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def brace_delta(line: str) -> int:
    """``{`` minus ``}`` on a line of PTX or MLIR, outside strings and ``//`` comments."""
    if '"' in line:
        line = _STRING.sub("", line)
    if "//" in line:
        line = line.split("//", 1)[0]
    return line.count("{") - line.count("}")


class Braces:
    """Tracks the nesting of ``{ }`` blocks over a file to check that it ends where its format
    says it ends: every block closed, none closed that was not opened."""

    def __init__(self, path: str | Path, fix: str) -> None:
        self.path, self.fix = str(path), fix
        self.depth = 0
        self.opened_at: list[int] = []
        self.unopened: int | None = None  # the first line that closed a block never opened

    def line(self, no: int, text: str) -> int:
        """Account for one line; return the depth after it."""
        d = brace_delta(text)
        if d > 0:
            self.opened_at.extend([no] * d)
        elif d < 0:
            if -d > len(self.opened_at) and self.unopened is None:
                self.unopened = no
            del self.opened_at[max(d, -len(self.opened_at)):]
        self.depth += d
        return self.depth

    def end(self, what: str) -> None:
        """Refuse a file that closed a block never opened, or ends inside a block."""
        if self.unopened is not None:
            raise InputError(self.path, f"line {self.unopened} closes a '{{' block that was "
                             "never opened", self.fix)
        if self.opened_at:
            raise InputError(self.path, f"ends inside {what} (the '{{' of line "
                             f"{self.opened_at[-1]} is never closed): the file is cut short",
                             self.fix)
