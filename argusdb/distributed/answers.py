"""Answers over a distributed program: per-rank timelines, critical rank, per-collective diff.

- :func:`launch_trace`: every interval of a launch group (kernels, collectives, steps, spans,
  host ops) as Chrome trace JSON for Perfetto: one process per rank, one thread per stream or
  host thread, on the reference clock of ``clock_alignment`` (its offset and error in ``args``).
- :func:`critical_ranks`: ``critical_rank`` rows of the launch groups of a version.
- :func:`collective_diff`: two program versions compared per collective (op, position in the
  step) and per step (step time, exposed communication), from timing-clean runs only, with the
  ratio of medians, its bootstrap CI and a Mann-Whitney p-value (:mod:`argusdb.answers.stats`).

Example:
    >>> rows = collective_diff(store, "815791fe353f460a", "bb80dc2f63d7491c")  # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from argusdb.answers import stats
from argusdb.errors import UsageError
from argusdb.store import Store

#: Significance level of :func:`collective_diff`'s verdicts.
ALPHA = 0.05


def launch_trace(store: Store, launch_group: str) -> dict[str, Any]:
    """Chrome trace JSON of one launch group: a process per rank, a thread per track.

    Raises:
        UsageError: no run of that launch group has intervals.
    """
    rows = store.rows(
        "SELECT i.rank, i.run_id, i.kind, i.role, i.name, i.track, i.step, i.ordinal, i.clock,"
        " i.aligned_start_ns, i.dur_ns, a.offset_ns, a.error_ns, r.collector, r.signature "
        "FROM interval_event AS i JOIN run AS r ON r.run_id = i.run_id "
        "LEFT JOIN clock_alignment AS a ON a.run_id = i.run_id "
        "WHERE i.launch_group = ? AND i.domain = 'trace' ORDER BY i.aligned_start_ns",
        [launch_group])
    if not rows:
        raise UsageError(f"launch group {launch_group!r} has no intervals; list launch groups "
                         "with \"SELECT DISTINCT launch_group FROM run\"")
    origin = min(r["aligned_start_ns"] for r in rows)
    tids: dict[tuple[int, str], int] = {}
    events: list[dict[str, Any]] = []
    for r in rows:
        pid = int(r["rank"] if r["rank"] is not None else 0)
        track = f"{r['track'] or r['kind']} ({r['collector']})"
        key = (pid, track)
        if key not in tids:
            tids[key] = len([k for k in tids if k[0] == pid])
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key],
                           "args": {"name": track}})
        events.append({"ph": "X", "name": r["name"], "cat": f"{r['kind']},{r['role']}",
                       "pid": pid, "tid": tids[key],
                       "ts": (r["aligned_start_ns"] - origin) / 1000.0,
                       "dur": r["dur_ns"] / 1000.0,
                       "args": {"run_id": r["run_id"], "step": r["step"],
                                "ordinal": r["ordinal"], "clock": r["clock"],
                                "clock_offset_ns": r["offset_ns"],
                                "clock_error_ns": r["error_ns"], "signature": r["signature"]}})
    for pid in sorted({k[0] for k in tids}):
        events.append({"ph": "M", "name": "process_name", "pid": pid,
                       "args": {"name": f"rank {pid}"}})
    return {"displayTimeUnit": "ns", "traceEvents": events,
            "otherData": {"launch_group": launch_group, "origin_ns": origin,
                          "clock": "reference rank's clock (clock_alignment)"}}


def critical_ranks(store: Store, version: str) -> list[dict[str, Any]]:
    """Per launch group of ``version``: each rank's last arrivals and waits, and the critical
    one."""
    return store.rows("SELECT * FROM critical_rank WHERE program_version = ? "
                      "ORDER BY launch_group, collector, rank", [version])


def _samples(store: Store, version: str) -> dict[tuple[str, str], list[float]]:
    """Per (quantity, key) the values of timing-clean runs of ``version`` (kept steps only)."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in store.rows(
            "SELECT s.step_ns, s.exposed_comm_ns FROM step_overlap AS s "
            "WHERE s.program_version = ? AND s.timing_clean AND s.step >= 1", [version]):
        out[("step_time", "step")].append(float(r["step_ns"]))
        out[("exposed_communication", "step")].append(float(r["exposed_comm_ns"]))
    for r in store.rows(
            "SELECT x.op, x.dur_ns, x.exposed_ns, row_number() OVER (PARTITION BY x.run_id, "
            "x.step, x.op ORDER BY x.seq) - 1 AS k FROM collective_exposure AS x "
            "WHERE x.program_version = ? AND x.timing_clean AND x.step >= 1", [version]):
        out[("collective_duration", f"{r['op']}")].append(float(r["dur_ns"]))
        out[("collective_exposed", f"{r['op']}")].append(float(r["exposed_ns"]))
    return out


def collective_diff(store: Store, from_version: str, to_version: str) -> list[dict[str, Any]]:
    """Compare two versions per step and per collective op, from timing-clean runs only.

    Quantities: ``step_time`` and ``exposed_communication`` per step (step_overlap),
    ``collective_duration`` and ``collective_exposed`` per instance of each op (collective
    durations summed over a step's instances of the op would hide chunking: compare per step
    for the total). Each row: medians, ratio to/from with its 95 % bootstrap CI, Mann-Whitney
    p, and ``significant`` (p < ALPHA and the CI excludes 1).

    Raises:
        UsageError: a version has no timing-clean step or collective rows.
    """
    a, b = _samples(store, from_version), _samples(store, to_version)
    for v, s in ((from_version, a), (to_version, b)):
        if not s:
            raise UsageError(f"version {v} has no timing-clean distributed runs (step_overlap, "
                             "collective_exposure); record it with ARGUS_DIST_MODE=events")
    rows: list[dict[str, Any]] = []
    for key in sorted(set(a) & set(b)):
        x, y = a[key], b[key]
        sx, sy = stats.summarize(x), stats.summarize(y)
        if sx.median == 0 and sy.median == 0:
            t = stats.RatioTest(float("nan"), float("nan"), float("nan"), 1.0)
        elif sx.median == 0:
            t = stats.RatioTest(float("inf"), float("nan"), float("nan"), float("nan"))
        else:
            t = stats.ratio_test(x, y)
        rows.append({
            "quantity": key[0], "key": key[1], "from_version": from_version,
            "to_version": to_version, "from_n": sx.n, "to_n": sy.n,
            "from_median_ns": sx.median, "to_median_ns": sy.median,
            "delta_ns": sy.median - sx.median, "ratio": t.ratio, "ci_low": t.ci_low,
            "ci_high": t.ci_high, "p_value": t.p_value,
            "significant": bool(t.p_value < ALPHA and not (t.ci_low <= 1.0 <= t.ci_high))})
    return rows
