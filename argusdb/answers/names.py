"""Signal names as a screen shows them: short enough for their column, never two alike.

Nsight Compute's raw page names a metric with its section and group
(``SM_A.TriageCompute.sm__inst_executed_pipe_uniform_realtime.avg.pct_of_peak_sustained_elapsed``,
92 letters): a table of such names is 200 columns wide. A screen (``argus report``) shows
the name without its section where no other signal then reads the same
(:func:`metric_name`), and cuts what is still too long in the middle with ``…``
(:func:`screen_names`), at word ends (``.``, ``_``) where it can and where the cut can be read
as that one signal only; ``--json`` and ``--detail`` keep every name whole.

Example:
    >>> short = screen_names(["SM_A.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg",
    ...                       "SM_A.TriageCompute.sm__inst_executed_pipe_xu_realtime.avg"], 30)
    >>> list(short.values())
    ['sm__inst…pipe_alu_realtime.avg', 'sm__inst…pipe_xu_realtime.avg']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

#: The section and group an Nsight Compute triage metric is listed under
#: (``SM_A.TriageCompute.`` of ``SM_A.TriageCompute.l1tex__t_sectors.sum``).
_SECTION_PREFIX = re.compile(r"^[A-Z][A-Z0-9_]*\.[A-Za-z]+\.(?=[a-z0-9]+__)")
#: Where a name may be cut: before or after these.
_WORD_ENDS = "._"
#: The shortest part of a name kept on either side of a cut.
_KEEP = 6


def metric_name(signal: str) -> str:
    """``signal`` without the section and group of an Nsight Compute triage metric
    (``SM_A.TriageCompute.l1tex__t_sectors.sum`` reads ``l1tex__t_sectors.sum``); any other
    name as it is.

    >>> metric_name("TPC.TriageCompute.sm__cycles_active.avg"), metric_name("duration")
    ('sm__cycles_active.avg', 'duration')
    """
    return _SECTION_PREFIX.sub("", signal)


def _clashes(head: str, tail: str, others: Iterable[str]) -> bool:
    """Whether ``head…tail`` could be read as one of ``others``."""
    return any(len(n) >= len(head) + len(tail) and n.startswith(head) and n.endswith(tail)
               for n in others)


def _words(name: str) -> tuple[set[int], set[int]]:
    """Where the words of ``name`` stop (``name[:e]`` ends with a whole word) and start
    (``name[j:]`` begins with one); words are separated by ``.`` and ``_`` (``sm__x`` is the
    words ``sm`` and ``x``)."""
    n = len(name)
    stops = {e for e in range(1, n) if name[e] in _WORD_ENDS and name[e - 1] not in _WORD_ENDS}
    starts = {j for j in range(1, n) if name[j - 1] in _WORD_ENDS
              and name[j] not in _WORD_ENDS}
    return stops | {n}, starts | {0}


def _cuts(name: str, room: int) -> list[tuple[int, int]]:
    """The (head, tail) lengths a cut of ``name`` to ``room`` letters may keep, best first:
    the most of the name kept, a whole word at either side of ``…`` counting eight letters,
    then the most even cut; cuts that keep fewer than :data:`_KEEP` letters on a side (an
    ellipsis at an end) come last."""
    stops, starts = _words(name)

    def rank(p: tuple[int, int]) -> tuple[int, int, int]:
        head, tail = p
        whole = (head in stops) + (len(name) - tail in starts)
        return -(head + tail + 8 * whole), abs(head - tail), head

    pairs = set()
    for head in [*range(_KEEP, room - _KEEP + 1), *(e for e in stops if 2 <= e < _KEEP)]:
        pairs.add((head, room - head))
        for j in starts:  # tails starting with a word
            tail = len(name) - j
            if _KEEP <= tail <= room - head:
                pairs.add((head, tail))
    at_ends = {(h, room - h) for h in range(room + 1)} - pairs
    return sorted(pairs, key=rank) + sorted(at_ends, key=rank)


def screen_names(signals: Iterable[str], width: int, among: Iterable[str] = ()
                 ) -> dict[str, str]:
    """Each of ``signals`` as a screen shows it in a column ``width`` wide: without the
    section and group of an Nsight Compute triage metric (:func:`metric_name`) where no other
    of ``signals`` and ``among`` (the signals not shown) then reads the same, and cut in the
    middle with ``…`` where still longer than ``width``. A cut keeps whole words (it falls at
    ``.`` or ``_``) where it can and is placed so that its head and tail match no other of
    those names: a screen never shows one name that two signals could have (the names are
    the same whatever the order of ``signals``).

    >>> short = screen_names(["SM_A.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg",
    ...                       "SM_A.TriageCompute.sm__inst_executed_pipe_xu_realtime.avg"], 30)
    >>> list(short.values())
    ['sm__inst…pipe_alu_realtime.avg', 'sm__inst…pipe_xu_realtime.avg']
    """
    every = list(dict.fromkeys(signals))
    pool = set(every).union(among)
    stripped = {s: metric_name(s) for s in pool}
    readers: dict[str, int] = {}
    for s in pool:
        readers[stripped[s]] = readers.get(stripped[s], 0) + 1
    # a name keeps its section where another signal would read the same without it
    shown = {s: stripped[s] if readers[stripped[s]] == 1 and (stripped[s] == s or stripped[s]
                                                               not in pool) else s
             for s in every}
    # what a cut must not be read as: every name, and every name without its section
    names = pool | set(stripped.values())
    # a cut keeping at least _KEEP letters of a side can only be read as names sharing them
    by_head: dict[str, list[str]] = {}
    by_tail: dict[str, list[str]] = {}
    for n in names:
        by_head.setdefault(n[:_KEEP], []).append(n)
        by_tail.setdefault(n[-_KEEP:], []).append(n)
    out = {}
    room = max(width, 2 * _KEEP + 1) - 1
    for s in every:
        name = shown[s]
        if len(name) <= width:
            out[s] = name
            continue

        def clear(cut: tuple[int, int], name: str = name) -> bool:
            h, t = cut
            near = (by_head[name[:_KEEP]] if h >= _KEEP else
                    by_tail[name[-_KEEP:]] if t >= _KEEP else names)
            return not _clashes(name[:h], name[len(name) - t:],
                                (n for n in near if n != name))

        cuts = _cuts(name, room)
        stops, starts = _words(name)
        # a cut with a whole word at neither side (``pipe_xu_…apsed``) only where keeping the
        # words that tell the names apart (``sm__…xu_realtime…elapsed``) does not do
        whole = [c for c in cuts if c[0] in stops or len(name) - c[1] in starts]
        cut = next(filter(clear, whole), None)
        if cut is not None:
            out[s] = f"{name[:cut[0]]}…{name[len(name) - cut[1]:]}"
            continue
        others = [n for n in names if n != name]
        double = next((c for c in _double_cuts(name, room - 1)
                       if not any(_reads_as(c, n) for n in others)), None)
        if double is not None:
            out[s] = double
            continue
        cut = next(filter(clear, cuts), cuts[0])
        out[s] = f"{name[:cut[0]]}…{name[len(name) - cut[1]:]}"
    return out


def _double_cuts(name: str, room: int) -> Iterator[str]:
    """``head…words…tail`` forms of ``name`` in ``room`` letters (the ``…`` not counted), the
    words whole, the shortest words first; head and tail whole words too where they fit."""
    stops, starts = _words(name)
    words = sorted(((a, b) for a in starts for b in stops if 0 < a < b < len(name)
                    and b - a <= room - 4), key=lambda w: (w[1] - w[0], w[0]))
    for a, b in words:
        left = room - (b - a)
        heads = [e for e in stops if 2 <= e <= min(a - 1, left // 2)]
        head = max(heads) if heads else min(a - 1, max(2, left // 2))
        tails = [len(name) - s for s in starts if 2 <= len(name) - s <= min(
            len(name) - b - 1, left - head)]
        tail = max(tails) if tails else min(len(name) - b - 1, left - head)
        if head >= 1 and tail >= 1:
            yield f"{name[:head]}…{name[a:b]}…{name[len(name) - tail:]}"


def _reads_as(short: str, name: str) -> bool:
    """Whether ``name`` has the parts of ``short`` (cut at ``…``) in their order."""
    parts = short.split("…")
    if not (name.startswith(parts[0]) and name.endswith(parts[-1])):
        return False
    at, end = len(parts[0]), len(name) - len(parts[-1])
    for part in parts[1:-1]:
        at = name.find(part, at, end)
        if at < 0:
            return False
        at += len(part)
    return at <= end
