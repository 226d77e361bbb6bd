"""Answers over a distributed program: per-rank timelines, critical rank, per-collective diff.

- :func:`launch_trace`: every interval of a launch group (kernels, collectives, steps, spans,
  host ops) as Chrome trace JSON for Perfetto: one process per rank, one thread per stream or
  host thread, on the reference clock of ``clock_alignment`` (its offset and error in ``args``),
  with a flow from each stored launching call to its kernel.
- :func:`critical_ranks`: ``critical_rank`` rows of the launch groups of a version.
- :func:`collective_diff`: two program versions compared per collective (op, position in the
  step) and per step (step time, exposed communication), from timing-clean runs only, with the
  ratio of medians, its bootstrap CI and a Mann-Whitney p-value (:mod:`argusdb.answers.stats`).

Example:
    >>> rows = collective_diff(store, "815791fe353f460a", "bb80dc2f63d7491c")  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

from argusdb.answers import stats
from argusdb.errors import UsageError
from argusdb.store.embedded import Store

#: Significance level of :func:`collective_diff`'s verdicts.
ALPHA = 0.05


def launch_trace(store: Store, launch_group: str) -> dict[str, Any]:
    """Chrome trace JSON of one launch group: a process per rank, a thread per track, on the
    reference rank's clock.

    Kernels whose launching call the store holds (``kernel_launch.api_*``: Kineto, nsys and
    CUPTI records) get that call as a slice on its host thread (``thread:<tid> (calls)``) and
    one flow from the call to the kernel, as :func:`argusdb.answers.export.perfetto_trace`
    draws them for one run; both ends are shifted by the rank's clock offset, like the rest.

    Raises:
        UsageError: no run of that launch group has intervals.
    """
    from argusdb.answers.export import call_slice, launch_flow

    rows = store.rows(
        "SELECT i.rank, i.run_id, i.kind, i.role, i.name, i.track, i.step, i.ordinal, i.clock,"
        " i.start_ns, i.aligned_start_ns, i.dur_ns, a.offset_ns, a.error_ns, r.collector, "
        "r.signature FROM interval_event AS i JOIN run AS r ON r.run_id = i.run_id "
        "LEFT JOIN clock_alignment AS a ON a.run_id = i.run_id "
        "WHERE i.launch_group = ? AND i.domain = 'trace' ORDER BY i.aligned_start_ns",
        [launch_group])
    if not rows:
        raise UsageError(f"launch group {launch_group!r} has no intervals; list launch groups "
                         "with \"SELECT DISTINCT launch_group FROM run\"")
    # the launching call of each kernel, keyed as interval_event keys the kernel (a trace's
    # timeline run counts as its program's run)
    calls = {(c["run_id"], c["kernel"], int(c["start_ns"]), c["track"]): c for c in store.rows(
        "SELECT p.run_id, k.kernel, k.start_ns, 'stream:' || k.stream_id AS track, "
        "k.correlation_id, k.launch_api, k.api_start_ns, k.api_dur_ns, k.api_tid, "
        "k.api_src_row, k.api_start_ns + coalesce(a.offset_ns, 0) AS api_aligned_ns "
        "FROM kernel_launch AS k JOIN run AS t ON t.run_id = k.run_id "
        "JOIN run AS p ON p.run_id = coalesce(t.meta->>'$.timeline_of.run_id', k.run_id) "
        "LEFT JOIN clock_alignment AS a ON a.run_id = p.run_id "
        "WHERE p.launch_group = ? AND k.api_start_ns IS NOT NULL AND k.start_ns IS NOT NULL",
        [launch_group])}
    origin = min([r["aligned_start_ns"] for r in rows]
                 + [int(c["api_aligned_ns"]) for c in calls.values()])
    tids: dict[tuple[int, str], int] = {}
    events: list[dict[str, Any]] = []

    def tid_of(pid: int, track: str) -> int:
        if (pid, track) not in tids:
            tids[(pid, track)] = len([k for k in tids if k[0] == pid])
            events.append({"ph": "M", "name": "thread_name", "pid": pid,
                           "tid": tids[(pid, track)], "args": {"name": track}})
        return tids[(pid, track)]

    drawn: dict[tuple[Any, ...], tuple[int, int, float]] = {}
    flow_ids = itertools.count(1)
    for r in rows:
        pid = int(r["rank"] if r["rank"] is not None else 0)
        # a collective and the NCCL kernel that runs it share a stream but do not nest: each
        # kind on threads of its own (a thread's slices must nest)
        track = r["track"] or r["kind"]
        tid = tid_of(pid, f"{track} ({r['collector']})" if r["kind"] == "kernel"
                     else f"{r['kind']} {track} ({r['collector']})")
        ts = (r["aligned_start_ns"] - origin) / 1000.0
        events.append({"ph": "X", "name": r["name"], "cat": f"{r['kind']},{r['role']}",
                       "pid": pid, "tid": tid, "ts": ts, "dur": r["dur_ns"] / 1000.0,
                       "args": {"run_id": r["run_id"], "step": r["step"],
                                "ordinal": r["ordinal"], "clock": r["clock"],
                                "clock_offset_ns": r["offset_ns"],
                                "clock_error_ns": r["error_ns"], "signature": r["signature"]}})
        call = calls.get((r["run_id"], r["name"], int(r["start_ns"]), r["track"])) \
            if r["kind"] == "kernel" else None
        if call is None:
            continue
        start = int(call["api_aligned_ns"]) - origin
        key = (pid, call["api_tid"], start, call["correlation_id"])
        if key not in drawn:
            ctid = tid_of(pid, f"thread:{call['api_tid']} (calls)")
            events.append(call_slice(call, pid, ctid, start / 1000.0, r["run_id"]))
            drawn[key] = (pid, ctid, (start + int(call["api_dur_ns"] or 0) // 2) / 1000.0)
        events += launch_flow(next(flow_ids), drawn[key],
                              (pid, tid, ts + int(r["dur_ns"]) // 2 / 1000.0))
    for pid in sorted({k[0] for k in tids}):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"rank {pid}"}})
    return {"displayTimeUnit": "ns", "traceEvents": events,
            "otherData": {"launch_group": launch_group, "origin_ns": origin,
                          "clock": "reference rank's clock (clock_alignment)",
                          "flows": next(flow_ids) - 1}}


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


def _by_rank(rows: list[dict[str, Any]], world: int) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows sorted by rank, and the ranks of ``range(world)`` that have none."""
    have = {int(r["rank"]) for r in rows if r.get("rank") is not None}
    return sorted(rows, key=lambda r: (r["rank"], str(r.get("name", "")))), \
        [r for r in range(world) if r not in have]


def _verdict(rows: list[dict[str, Any]], world: int, why_none: str,
             **extra: Any) -> dict[str, Any]:
    rows, missing = _by_rank(rows, world)
    if not rows:
        return {"verdict": "insufficient", "why": why_none, "per_rank": [], **extra}
    if missing:
        return {"verdict": "insufficient", "why": f"ranks {missing} have no such rows: "
                f"{why_none}", "per_rank": rows, **extra}
    return {"verdict": "sufficient", "per_rank": rows, **extra}


def observation(store: Store, request: dict[str, Any],
                tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Per requested signal of a torchrun observation, the per-rank answer and its verdict.

    ``tasks`` are the plan's tasks as run (``action``, ``status``, ``params``, ``detail``).
    Step time, overlap, exposed communication (observed) and collective durations come from the
    timing-clean ``dist_events`` launch only; the derived exposed communication from the forced
    variant's runs; host ops from the profiler launch; kernel durations from the CUPTI launch.
    A signal without rows is ``insufficient`` with the reason (the task's own where it did not
    run), never a value.
    """
    dist = request["distributed"]
    world = int(dist["world_size"])
    by_action = {t["action"]: t for t in tasks}

    def group(action: str) -> tuple[str | None, str | None]:
        t = by_action.get(action)
        if t is None:
            return None, f"the plan has no {action} launch"
        if t["status"] not in ("done", "reused"):
            why = (t.get("detail") or {}).get("reason") or (t.get("detail") or {}).get("error")
            return None, f"{action} {t['status']}: {why or 'no detail'}"
        # a replayed launch keeps its recorded launch group
        return str((t.get("detail") or {}).get("launch_group") or t["params"]["launch_group"]), \
            None

    clean, clean_why = group("dist_events")
    out: dict[str, Any] = {}
    steps = store.rows(
        "SELECT rank, run_id, n_steps, step_ns, compute_ns, comm_ns, overlap_ns, "
        "exposed_comm_ns, signature, timing_clean FROM rank_step WHERE launch_group = ? "
        "AND timing_clean AND NOT forced_wait ORDER BY rank", [clean]) if clean else []
    no_steps = clean_why or (f"the clean launch {clean} recorded no steps: wrap the program's "
                             f"step in torch.profiler.record_function('{dist['step_mark']}') "
                             f"(or set the step name with ARGUS_STEP_MARK)")
    for sig in request["signals"]:
        if sig == "step_time":
            out[sig] = _verdict([{k: r[k] for k in ("rank", "run_id", "n_steps", "step_ns")}
                                 for r in steps], world, no_steps, launch_group=clean)
        elif sig == "overlap":
            out[sig] = _verdict([{k: r[k] for k in ("rank", "run_id", "n_steps", "compute_ns",
                                                    "comm_ns", "overlap_ns")} for r in steps],
                                world, no_steps, launch_group=clean)
        elif sig == "exposed_communication":
            ans = _exposed(store, steps, clean, group("dist_cupti")[0], world,
                           clean_why or "the clean launch recorded no collective and no "
                           "kernel record holds an NCCL kernel")
            forced, forced_why = group("dist_forced")
            derived = store.rows(
                "SELECT r.rank, e.run_id, e.value AS exposed_comm_ns, e.conditions "
                "FROM derived_evidence AS e JOIN run AS r ON r.run_id = e.run_id "
                "WHERE e.signal = 'exposed_communication' AND r.launch_group = ? "
                "AND e.parent_run_id IN (SELECT run_id FROM run WHERE launch_group = ?) "
                "ORDER BY r.rank", [forced, clean]) if forced and clean else []
            import json as _json

            for d in derived:
                cond = _json.loads(d.pop("conditions") or "{}")
                d["holds"] = bool(cond.get("holds"))
                d["dropped_steps"] = len(cond.get("dropped") or [])
            ans["derived"] = _verdict(
                derived, world, forced_why or "no forced/clean pair of runs per rank",
                launch_group=forced, evidence_class="derived")
            if ans["derived"]["per_rank"] and not all(d["holds"] for d in derived):
                ans["derived"]["note"] = ("holds is false where the forced drains cost more "
                                          "than the communication they serialize: read the "
                                          "observed value")
            out[sig] = ans
        elif sig in ("collective_duration", "collective_bytes"):
            rows = store.rows(
                "SELECT x.rank, x.op, count(*) AS n, median(x.dur_ns) AS median_dur_ns, "
                "median(x.exposed_ns) AS median_exposed_ns, max(x.bytes) AS bytes "
                "FROM collective_exposure AS x WHERE x.launch_group = ? AND x.timing_clean "
                "AND (x.step IS NULL OR x.step >= 1) GROUP BY ALL ORDER BY x.rank, x.op",
                [clean]) if clean else []
            bw = {(b["rank"], b["op"]): b for b in store.rows(
                "SELECT rank, op, median(algbw_gbps) AS algbw_gbps, median(busbw_gbps) AS "
                "busbw_gbps, median(wait_ns) AS median_wait_ns FROM collective_instance "
                "WHERE launch_group = ? AND collector = 'torchdist' AND (step IS NULL OR "
                "step >= 1) GROUP BY rank, op", [clean])} if clean else {}
            for r in rows:  # achieved bandwidth and waiting for the last rank, per rank and op
                b = bw.get((r["rank"], r["op"]), {})
                r.update({k: b.get(k) for k in ("algbw_gbps", "busbw_gbps", "median_wait_ns")})
            out[sig] = _verdict(rows, world, clean_why or f"the clean launch {clean} called no "
                                "torch.distributed collective the recorder wraps",
                                launch_group=clean)
        elif sig == "host_ops":
            prof, why = group("dist_profiler")
            rows = store.rows(
                "SELECT rank, count(DISTINCT name) AS distinct_ops, sum(n) AS n, "
                "any_value(signature) AS signature FROM rank_interval WHERE launch_group = ? "
                "AND kind = 'host_op' GROUP BY rank ORDER BY rank", [prof]) if prof else []
            out[sig] = _verdict(rows, world, why or "torch.profiler recorded no host op",
                                launch_group=prof, timing_clean=False)
        elif sig == "duration":
            if dist["target"] == "kernel":
                grp, why = group("dist_cupti")
                rows = store.rows(
                    "SELECT rank, name, sum(n) AS n, median(median_dur_ns) AS median_dur_ns "
                    "FROM rank_interval WHERE launch_group = ? AND kind = 'kernel' AND "
                    "starts_with(name, ?) GROUP BY rank, name ORDER BY rank",
                    [grp, dist["name"]]) if grp else []
                none = why or f"no kernel named {dist['name']} in the CUPTI records"
            else:
                grp, none = clean, clean_why or (
                    f"the clean launch recorded no range named {dist['name']!r} (a "
                    f"torch.profiler.record_function range of the program)")
                rows = store.rows(
                    "SELECT rank, name, n_measured AS n, median_dur_ns FROM rank_interval "
                    "WHERE launch_group = ? AND kind IN ('step', 'span') AND name = ? "
                    "AND timing_clean ORDER BY rank", [clean, dist["name"]]) if clean else []
            out[sig] = _verdict(rows, world, none, launch_group=grp)
    extra: dict[str, Any] = {"signals": out}
    if clean:
        extra["clock_alignment"] = store.rows(
            "SELECT rank, ref_rank, offset_ns, error_ns, max_residual_ns, n_matched, method "
            "FROM clock_alignment WHERE launch_group = ? ORDER BY rank", [clean])
        extra["critical_rank"] = store.rows(
            "SELECT rank, n_instances, n_last_to_arrive, total_wait_ns, is_critical "
            "FROM critical_rank WHERE launch_group = ? AND collector = 'torchdist' "
            "ORDER BY rank", [clean])
    extra["answered"] = all(v["verdict"] == "sufficient" for v in out.values())
    return extra


def _exposed(store: Store, steps: list[dict[str, Any]], clean: str | None, cupti: str | None,
             world: int, why_none: str) -> dict[str, Any]:
    """exposed_communication per rank (:mod:`argusdb.answers.exposure`): per step where steps
    are marked (``rank_step``) or found by repetition, else over the measured window; every
    row says which (``per``) and carries the window reading (``window_*``, its ``basis``)."""
    from argusdb.answers.exposure import exposure

    marked = {int(r["rank"]): r for r in steps}
    by_rank = exposure(store, [g for g in (clean, cupti) if g], marked)
    rows: list[dict[str, Any]] = []
    for rank, d in sorted(by_rank.items()):
        w, st = d["chosen"], d["steps"]
        row: dict[str, Any] = {
            "rank": rank, "run_id": w["run_id"], "basis": w["basis"],
            "window_ns": w["window_ns"], "window_comm_ns": w["comm_ns"],
            "window_overlap_ns": w["overlap_ns"], "window_exposed_comm_ns": w["exposed_comm_ns"],
            "upper_bound": bool(d.get("upper_bound")), "why_basis": d["why_basis"],
            "steps_from": st["from"], "n_steps": st.get("n_steps", 0)}
        if st["from"] == "marked":
            m = marked[rank]
            row.update({"per": "step (marked)", "run_id": m["run_id"], "comm_ns": m["comm_ns"],
                        "exposed_comm_ns": m["exposed_comm_ns"]})
        elif st["from"] == "found" and st["n_steps"]:
            row.update({"per": f"step (found: period {st['period']})",
                        "exposed_comm_ns": st["median_exposed_comm_ns"],
                        "comm_ns": _median_of(st["steps"], "comm_ns"),
                        "step_ns": st["median_step_ns"], "period": st["period"],
                        "step_sequence": st["sequence"]})
        else:
            row.update({"per": "window", "comm_ns": w["comm_ns"],
                        "exposed_comm_ns": w["exposed_comm_ns"],
                        "why_no_steps": st.get("why")})
        rows.append(row)
    groups = sorted({str(d["chosen"]["launch_group"]) for d in by_rank.values()})
    return _verdict(rows, world, why_none, launch_group=clean if marked or not groups
                    else groups[0] if len(groups) == 1 else ",".join(groups),
                    evidence_class="observed",
                    windows=[w for d in by_rank.values() for w in d["windows"]])


def _median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    xs = sorted(float(r[key]) for r in rows if r["step"] >= 1)
    n = len(xs)
    return None if not n else xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def describe_observation(dist: dict[str, Any]) -> list[str]:
    """Text lines of :func:`observation`: a verdict per signal, a value per rank."""
    lines: list[str] = []
    keys = {"step_time": "step_ns", "overlap": "overlap_ns",
            "exposed_communication": "exposed_comm_ns", "collective_duration": "median_dur_ns",
            "collective_bytes": "bytes", "host_ops": "n", "duration": "median_dur_ns"}
    for sig, ans in dist["signals"].items():
        head = f"{sig}: {ans['verdict']}"
        lines.append(head + (f" ({ans['why']})" if ans.get("why") else "")
                     + (f", launch {ans['launch_group']}" if ans.get("launch_group") else ""))
        parts = [ans] + ([ans["derived"]] if "derived" in ans else [])
        for part in parts:
            label = part.get("evidence_class", "")
            for r in part["per_rank"]:
                key = keys[sig]
                what = f" {r['op']}" if "op" in r else ""
                holds = "" if "holds" not in r else f" holds={r['holds']}"
                v = "–" if r.get(key) is None else f"{r[key]:,.0f}"
                per = f" per {r['per']}" if r.get("per") else ""
                win = (f"; window {r['window_exposed_comm_ns']:,.0f} of "
                       f"{r['window_comm_ns']:,.0f} ns communication exposed ({r['basis']}"
                       f"{', upper bound' if r.get('upper_bound') else ''})"
                       if "window_exposed_comm_ns" in r and r.get("per") != "window" else
                       f" ({r['basis']}{', upper bound' if r.get('upper_bound') else ''})"
                       if "basis" in r else "")
                lines.append(f"  rank {r['rank']}{what} {label} {key}={v}{per}{holds}{win}")
            if part is not ans and part["verdict"] != "sufficient":
                lines.append(f"  derived: insufficient ({part.get('why')})")
    crit = [r["rank"] for r in dist.get("critical_rank") or [] if r["is_critical"]]
    if crit:
        lines.append(f"critical rank: {crit[0]}")
    for a in dist.get("clock_alignment") or []:
        if a["rank"] != a["ref_rank"]:
            lines.append(f"clock: rank {a['rank']} offset {a['offset_ns']:,} ns, error (MAD) "
                         f"{a['error_ns']:,} ns over {a['n_matched']} collectives")
    return lines


def collective_rows(store: Store, from_version: str, to_version: str) -> list[dict[str, Any]]:
    """:func:`collective_diff` where both versions have timing-clean distributed runs, else
    ``[]`` (a program without launches); NaN ratios become None (JSON has no NaN)."""
    import math

    have = store.rows("SELECT count(DISTINCT program_version) AS n FROM step_overlap "
                      "WHERE timing_clean AND list_contains(?, program_version)",
                      [[from_version, to_version]])
    if have[0]["n"] < 2:
        return []
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in collective_diff(store, from_version, to_version)]
