"""Exposed communication of a launch with or without step markers.

Three readings, each said by name in the answer (no step is assumed):

- **window** (``rank_window``): per rank, over its measured window, the communication no
  compute covered, from the run's kernel records where it has them (NCCL kernels against the
  other kernels of every stream) else from its recorded spans;
- **marked steps** (``rank_step``): per step the program marks with ``record_function``;
- **found steps** (:func:`find_period`): where no step is marked, the rank's own repetition: the
  smallest period of its kernel sequence (the busiest stream's kernel names) or of its span
  sequence (collective op and bytes, compute span names), after the shortest warm-up prefix.
  Step ``k`` runs from the start of its first interval to the start of the next step's first
  (the last step to the start of what follows it in the sequence, else to the window's end);
  the busy pieces of ``rank_busy`` are clipped to it. A period is the smallest repeating
  unit: where a step repeats one layer's kernels exactly, the unit found is the layer.

Example:
    >>> find_period(["init", "mm", "gelu", "ar", "mm", "gelu", "ar", "mm", "gelu", "ar"])
    (1, 3)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from argusdb.store.embedded import Store

#: Repetitions a period needs before it counts as the program's step.
MIN_REPEATS = 3
#: Longest period looked for (kernels per step).
MAX_PERIOD = 2000


def find_period(seq: list[str], min_repeats: int = MIN_REPEATS,
                max_period: int = MAX_PERIOD) -> tuple[int, int] | None:
    """``(offset, period)`` of the sequence's repetition. For each period ``p``, the longest
    stretch where ``seq[j] == seq[j - p]`` holds (so a warm-up prefix and an epilogue after the
    last iteration fall outside it); the period whose stretch is longest wins, the smallest of
    those within one period of it (a multiple of the true period repeats as far). ``offset`` is
    the stretch's first element. None when no period repeats ``min_repeats`` times."""
    import numpy as np

    codes: dict[str, int] = {}
    a = np.array([codes.setdefault(x, len(codes)) for x in seq], dtype=np.int64)
    n = len(a)
    found: list[tuple[int, int, int]] = []  # (covered, p, offset)
    for p in range(1, min(n // min_repeats, max_period) + 1):
        eq = np.concatenate(([False], a[p:] == a[:-p], [False]))
        edges = np.flatnonzero(np.diff(eq.astype(np.int8)))
        if not len(edges):
            continue
        runs = edges[1::2] - edges[::2]  # lengths of the stretches of matches
        i = int(np.argmax(runs))
        cover = int(runs[i]) + p
        if cover // p >= min_repeats:
            found.append((cover, p, int(edges[::2][i])))
    if not found:
        return None
    best = max(c for c, _, _ in found)
    _, p, offset = min((q, q, o) for c, q, o in found if c >= best - q)
    return offset, p


def _sequence(store: Store, run_id: str, basis: str) -> list[dict[str, Any]]:
    """The intervals whose repetition is the rank's step: kernels of its busiest stream, or
    its collective (op and bytes) and compute spans, by start."""
    if basis == "kernels":
        rows = store.rows(
            "SELECT name AS key, track, start_ns, end_ns FROM interval_event WHERE run_id = ? "
            "AND kind = 'kernel' AND domain = 'trace' ORDER BY start_ns, end_ns", [run_id])
        top = Counter(r["track"] for r in rows).most_common(1)
        return [r for r in rows if top and r["track"] == top[0][0]]
    return store.rows(
        "SELECT i.name || coalesce(':' || c.bytes, '') AS key, i.track, i.start_ns, i.end_ns "
        "FROM interval_event AS i LEFT JOIN collective AS c ON c.run_id = i.run_id "
        "AND i.kind = 'collective' AND c.seq = i.ordinal AND c.op = i.name "
        "AND c.start_ns = i.start_ns WHERE i.run_id = ? AND i.domain = 'trace' "
        "AND i.kind IN ('collective', 'span') ORDER BY i.start_ns, i.end_ns", [run_id])


def found_steps(store: Store, run_id: str, basis: str) -> dict[str, Any]:
    """Steps of one run found by repetition, with each step's busy time and exposed
    communication (``rank_busy`` clipped to it), or why none were found."""
    seq = _sequence(store, run_id, basis)
    hit = find_period([r["key"] for r in seq])
    if hit is None:
        return {"from": "none", "why": f"the run's {len(seq)} "
                f"{'kernels' if basis == 'kernels' else 'spans'} do not repeat "
                f"{MIN_REPEATS} times", "steps": []}
    offset, p = hit
    k = _repeats(seq, offset, p)
    members = seq[offset:offset + k * p]
    starts = [int(members[i * p]["start_ns"]) for i in range(k)]
    after = offset + k * p  # the last step ends where the sequence goes on, else at the end
    last = int(seq[after]["start_ns"]) if after < len(seq) else int(store.rows(
        "SELECT max(end_ns) AS e FROM rank_busy WHERE run_id = ?", [run_id])[0]["e"])
    ends = [*starts[1:], max(last, max(int(r["end_ns"]) for r in members[(k - 1) * p:]))]
    rows = store.rows(
        "WITH s AS (SELECT unnest(?::INTEGER[]) AS step, unnest(?::BIGINT[]) AS s0, "
        "unnest(?::BIGINT[]) AS s1) "
        "SELECT s.step, s.s1 - s.s0 AS step_ns, "
        "coalesce(sum(least(b.end_ns, s.s1) - greatest(b.start_ns, s.s0)) "
        "FILTER (WHERE b.what = 'compute'), 0) AS compute_ns, "
        "coalesce(sum(least(b.end_ns, s.s1) - greatest(b.start_ns, s.s0)) "
        "FILTER (WHERE b.what = 'communication'), 0) AS comm_ns, "
        "coalesce(sum(least(b.end_ns, s.s1) - greatest(b.start_ns, s.s0)) "
        "FILTER (WHERE b.what = 'overlap'), 0) AS overlap_ns "
        "FROM s LEFT JOIN rank_busy AS b ON b.run_id = ? AND b.start_ns < s.s1 "
        "AND s.s0 < b.end_ns GROUP BY s.step, s.s0, s.s1 ORDER BY s.step",
        [list(range(k)), starts, ends, run_id])
    for r in rows:
        r["exposed_comm_ns"] = r["comm_ns"] - r["overlap_ns"]
    return {"from": "found", "period": p, "offset": offset, "repeats": k,
            "sequence": [r["key"] for r in members[:p]], "steps": rows}


def _repeats(seq: list[dict[str, Any]], offset: int, p: int) -> int:
    """Whole periods from ``offset`` on that repeat the first one."""
    k = 1
    while offset + (k + 1) * p <= len(seq) and all(
            seq[offset + k * p + i]["key"] == seq[offset + i]["key"] for i in range(p)):
        k += 1
    return k


def _median(xs: list[float]) -> float | None:
    ys = sorted(xs)
    n = len(ys)
    if not n:
        return None
    return float(ys[n // 2]) if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def exposure(store: Store, groups: list[str], marked: dict[int, dict[str, Any]]
             ) -> dict[int, dict[str, Any]]:
    """Per rank of the launch groups ``groups`` (timing-clean, not forced): the window reading
    of each basis, the one chosen (kernel records where they hold communication, else spans),
    and the steps: ``marked`` (``rank_step`` rows by rank) or found by repetition."""
    rows = store.rows(
        "SELECT * FROM rank_window WHERE list_contains(?, launch_group) AND timing_clean "
        "AND NOT forced_wait ORDER BY rank, basis", [groups])
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        out.setdefault(int(r["rank"]), {"windows": []})["windows"].append(r)
    for rank, d in out.items():
        ws = d["windows"]
        kern = [w for w in ws if w["basis"] == "kernels" and w["n_communication"] > 0]
        pick = kern[0] if kern else next((w for w in ws if w["basis"] == "spans"), ws[0])
        d["chosen"] = pick
        if not kern and any(w["basis"] == "kernels" for w in ws):
            d["why_basis"] = ("the kernel records hold no NCCL kernel (on one rank NCCL "
                              "copies or skips the data without one): the collective spans "
                              "are read, against record_function compute spans")
        elif kern:
            d["why_basis"] = "kernel records of every stream: NCCL kernels against the others"
        else:
            d["why_basis"] = ("no kernel records (no CUDA, or no dist_cupti launch): the "
                              "collective spans against record_function compute spans")
        if pick["basis"] == "spans" and pick["n_compute"] == 0:
            d["upper_bound"] = True
        if rank in marked:
            d["steps"] = {"from": "marked", "n_steps": marked[rank]["n_steps"],
                          "median_exposed_comm_ns": marked[rank]["exposed_comm_ns"]}
        else:
            f = found_steps(store, pick["run_id"], pick["basis"])
            kept = [s["exposed_comm_ns"] for s in f["steps"] if s["step"] >= 1]
            f["n_steps"] = len(kept)
            f["median_exposed_comm_ns"] = _median(kept)
            f["median_step_ns"] = _median([s["step_ns"] for s in f["steps"] if s["step"] >= 1])
            d["steps"] = f
    return out
