"""One style of numbers and units for every answer a person reads.

The CLI's tables, the dashboard, the notebook HTML and the MCP text all format values here, so
a duration reads the same everywhere: ``25.63 µs`` or ``1.2 ms``, never ``25630.0`` in one
place and ``2.563e+04`` in another. The rules:

- a value with a unit is scaled to a human unit: time to ns / µs / ms / s, counts (``inst``,
  ``count``, ``samples``, ``cycles``, bytes) to k / M / G / T once they pass 100,000, keeping
  four significant digits (``40.2 M inst``);
- a number without a unit keeps thousands separators (``40,198,144``) and never goes to
  exponent notation (``0.0000084`` rather than ``8.4e-06``);
- a missing value (None, NaN) is one mark, :data:`MISSING`, wherever it appears;
- a p-value below 0.0001 is ``< 0.0001``; a share (0..1) is a percentage (``0.1 %``), and
  every percentage has a space before its sign (``6.85 %``, :func:`percent`);
- a signal name longer than its column is cut in the middle
  (:func:`argusdb.answers.names.screen_names`), where it stays distinct from the other names;
  ``--json`` and ``--detail`` keep it whole;
- lists and mappings are joined as text (``a, b``; ``key=value``), never printed as reprs.

Machine output (``--json``, ``--csv``) keeps full precision and does not come through here.

Example:
    >>> quantity(25630.0, "ns"), quantity(1204300.0, "ns"), quantity(40198144, "inst")
    ('25.63 µs', '1.204 ms', '40.2 M inst')
    >>> number(4.16399e+07), number(8.412e-06), number(None), p_value(3.5e-21)
    ('41,639,900', '0.000008412', '–', '< 0.0001')
    >>> share(0.001), percent(-0.0685), quantity(68157440, "sector")
    ('0.1 %', '-6.85 %', '68.16 M sector')
    >>> text({"standing": "clean", "runs": ["875ae300", "c0275cdd"]})
    'standing=clean, runs=875ae300, c0275cdd'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from argusdb.schema.signature import readable

#: How every missing value is shown (None, NaN, a CI that cannot be computed).
MISSING = "–"
#: Lines an answer's default (screen) view may take; longer answers say "+ N more" and show
#: every row with ``--all`` (``--json`` and ``--csv`` always have every row).
SCREEN_LINES = 60
#: Columns an answer's default (screen) view may take: long names are cut to fit
#: (:func:`argusdb.answers.names.screen_names`); ``--json`` and ``--detail`` keep them whole.
SCREEN_WIDTH = 120
#: Signals an answer shows first, in this order (report, diff, trajectory).
HEADLINE = ("duration", "scope_cycles", "exposed_latency", "exposed_communication",
            "inst_executed", "thread_inst_executed", "warp_stall_samples", "pc_samples",
            "pc_stalled_samples")

#: Time units and their size in ns.
_TIME = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
#: Human time units, largest first.
_TIME_STEPS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
#: SI prefixes of counts, largest first.
_COUNT_STEPS = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
#: Units that are counts of things (scaled by SI prefixes); Nsight Compute names them in the
#: singular (``sector``, ``cycle``, ``block``).
_COUNTS = {"inst", "count", "samples", "cycles", "bytes", "B", "warps", "ctas", "launches",
           "sectors", "requests", "transactions", "sector", "cycle", "warp", "block",
           "request", "thread", "threads", "branches", "wavefronts", "byte"}
#: Units of bytes: a prefix joins them as ``MB``.
_BYTES = ("bytes", "byte", "B")
#: Counts at or above this are shown with an SI prefix; below it, digits with separators.
_SI_FROM = 1e5


def is_number(v: Any) -> bool:
    """Whether ``v`` is a number a table right-aligns (bool is not)."""
    return isinstance(v, int | float | Decimal) and not isinstance(v, bool)


def missing(v: Any) -> bool:
    """Whether ``v`` is a missing value: None, or a float NaN."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def _significant(v: float, digits: int = 4) -> str:
    """``v`` with ``digits`` significant digits in fixed notation (never an exponent)."""
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    out = f"{v:,.{decimals}f}"
    return out.rstrip("0").rstrip(".") if "." in out else out


def number(v: Any) -> str:
    """A number as a person reads it: separators, no exponent, :data:`MISSING` when absent.

    Integers (and floats that are whole) keep every digit with thousands separators; other
    floats show four significant digits, or one decimal from 100 up.
    """
    if missing(v):
        return MISSING
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, Decimal):
        v = float(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        if v.is_integer():
            return f"{int(v):,}"
        if abs(v) >= 100:
            return f"{v:,.1f}"
        if abs(v) < 1e-12:
            return "0"
        return _significant(v)
    return text(v)


def quantity(v: Any, unit: str | None) -> str:
    """``v`` in ``unit``, scaled to a human unit (``25.63 µs``, ``40.2 M inst``, ``12.5 %``).

    A unit this module does not know is kept as a suffix of the plain :func:`number`.
    """
    if missing(v):
        return MISSING
    if not is_number(v):
        return text(v)
    x = float(v)
    u = (unit or "").strip()
    if u in _TIME:
        ns = x * _TIME[u]
        for size, name in _TIME_STEPS:
            if abs(ns) >= size or size == 1.0:
                return f"{_significant(ns / size) if ns else '0'} {name}"
    if u in _COUNTS:
        for size, prefix in _COUNT_STEPS:
            if abs(x) >= max(size, _SI_FROM):
                tail = f"{prefix}B" if u in _BYTES else f"{prefix} {u}"
                return f"{_significant(x / size)} {tail}"
        return f"{number(v)} {'B' if u in _BYTES else u}"
    if u in ("%", "pct", "percent"):
        return f"{number(round(x, 2))} %"
    if u in ("share", "fraction"):
        return share(x)
    return f"{number(v)} {u}".rstrip()


def axis_unit(largest: float, unit: str | None) -> tuple[float, str | None]:
    """The factor and unit a chart axis of values up to ``largest`` (in ``unit``) is drawn
    in, so that its tick labels read as :func:`quantity` writes values (``µs``, ``M inst``)
    and never need an exponent.

    >>> axis_unit(424_100.0, "ns"), axis_unit(41_639_936, "inst"), axis_unit(19_336, "samples")
    ((0.001, 'µs'), (1e-06, 'M inst'), (1.0, 'samples'))
    """
    u = (unit or "").strip()
    x = abs(largest) if not missing(largest) else 0.0
    if u in _TIME:
        ns = x * _TIME[u]
        size, name = next(((sz, nm) for sz, nm in _TIME_STEPS if ns >= sz), (1.0, "ns"))
        return _TIME[u] / size, name
    if u in _COUNTS:
        for size, prefix in _COUNT_STEPS:
            if x >= max(size, _SI_FROM):
                return 1 / size, f"{prefix}B" if u in _BYTES else f"{prefix} {u}"
    return 1.0, unit


def display_unit(signal: str, unit: str | None) -> str | None:
    """The unit an answer shows for ``signal``: instruction counts read ``inst`` whatever
    their stored unit (the store keeps ``inst`` for Nsight Compute's kernel totals and
    ``count`` for its per-instruction rows: the unit tells the checker their granularity)."""
    if (unit == "count" and signal.endswith("inst_executed")) or \
            (unit == "count" and signal.startswith("thread_inst_executed")):
        return "inst"
    return unit


def span(lo: Any, hi: Any, unit: str | None) -> str:
    """A range of two values in one unit: ``103 – 1,672 cycles`` (the unit said once when
    both scale to it)."""
    a, b = quantity(lo, unit), quantity(hi, unit)
    ha, _, ua = a.partition(" ")
    _, _, ub = b.partition(" ")
    if ua and ua == ub:
        return f"{ha} – {b}"
    return f"{a} – {b}"


def ratio(v: Any) -> str:
    """A ratio of medians: four decimals (``0.9314``)."""
    if missing(v):
        return MISSING
    x = float(v)
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:.4f}"


def interval(lo: Any, hi: Any) -> str:
    """A confidence interval of a ratio: ``[0.9304, 0.9321]``."""
    if missing(lo) or missing(hi):
        return MISSING
    return f"[{ratio(lo)}, {ratio(hi)}]"


def p_value(p: Any) -> str:
    """A p-value: ``< 0.0001`` below that, else two significant digits."""
    if missing(p):
        return MISSING
    x = float(p)
    if x < 1e-4:
        return "< 0.0001"
    return _significant(x, 2)


def share(v: Any) -> str:
    """A share (0..1) as a percentage with one decimal (``0.1 %``; below that ``< 0.1 %``)."""
    if missing(v):
        return MISSING
    x = float(v) * 100
    if 0 < x < 0.05:
        return "< 0.1 %"
    return f"{x:.1f} %"


def percent(fraction: Any, decimals: int = 2) -> str:
    """A relative change or a threshold (a fraction: 0.0685) as a percentage with
    ``decimals`` decimals, in the style of every other percentage (``6.85 %``)."""
    if missing(fraction):
        return MISSING
    return f"{float(fraction) * 100:.{decimals}f} %"


def text(v: Any) -> str:
    """Any value as text, without Python reprs: lists joined with ``, ``, mappings as
    ``key=value`` pairs, missing values as :data:`MISSING`, long or multi-line text cut."""
    if missing(v):
        return MISSING
    if isinstance(v, bool):
        return str(v).lower()
    if is_number(v):
        return number(v)
    if isinstance(v, Mapping):
        out = ", ".join(f"{k}={text(x)}" for k, x in v.items())
    elif isinstance(v, list | tuple | set | frozenset):
        out = ", ".join(text(x) for x in v)
    else:
        out = str(v)
    out = out.replace("\n", " ")
    return out if len(out) <= 120 else out[:117] + "..."


def signature(sig: str) -> str:
    """A run's interference signature for reading: what the recording did not state (``?``)
    left out (the stored signature keeps it; the checker compares stored signatures); see
    :func:`argusdb.schema.signature.readable`.

    >>> signature("replay(? passes, ?)+pc_sampling"), signature("replay(38 passes, ?)")
    ('replay+pc_sampling', 'replay(38 passes)')
    """
    return readable(sig)


def cell(v: Any) -> str:
    """A table cell of a query answer: :func:`number` for numbers, :func:`text` otherwise;
    SQL NULL and NaN are both ``NULL`` (the JSON answer writes both as ``null``)."""
    if missing(v):
        return "NULL"
    return number(v) if is_number(v) else text(v)


def count(n: int, noun: str) -> str:
    """``1 run``, ``2 runs``: a count with its noun."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def layout(rows: list[list[str]], right: list[bool] | None = None) -> list[str]:
    """Text rows (the first is the header) as aligned lines: two spaces between columns,
    ``right`` columns right-aligned, trailing blanks cut; columns empty in every row but the
    header are dropped."""
    if not rows:
        return []
    width = len(rows[0])
    keep = [i for i in range(width) if any(r[i] for r in rows[1:])] or list(range(width))
    right = right or [False] * width
    widths = {i: max(len(r[i]) for r in rows) for i in keep}
    return ["  ".join(r[i].rjust(widths[i]) if right[i] else r[i].ljust(widths[i])
                      for i in keep).rstrip() for r in rows]
