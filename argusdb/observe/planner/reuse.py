"""Reuse: evidence already in the store that a collect task would collect again.

A stored run is reused for a task when it measured the *same program version*, under a
*non-conflicting interference signature* (clean timing for a timing task; counter replay
without probes for Nsight Compute; PC sampling for Proton sampling), its rows *cover the scope*
asked for, and it holds every signal the task collects. A collection of a variant looks for a
stored variant made from the parent by the same transform (``program_version.transform``, e.g.
``forced_wait:softmax/softmax_fwd/load``) and accepts its probe, nothing else.

Example:
    >>> from argusdb.store.embedded import Store
    >>> with open_store("argus.duckdb", read_only=True) as store:
    ...     versions = parent_versions(store, ProgramSource.from_path("softmax.py"), None)
    >>> versions.ids
    ['ee0369be2e320607']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import program_version_id
from argusdb.observe.planner.plan import Task
from argusdb.schema.shape import INTRA_KERNEL_SCOPE
from argusdb.store.embedded import Store


@dataclass
class Versions:
    """Program versions of the source the plan would measure, and how they were chosen."""

    ids: list[str]
    why: str


def parent_versions(store: Store, src: ProgramSource, options: dict[str, str] | None
                    ) -> Versions:
    """Stored original (non-variant) versions of ``src`` that the plan's version can equal.

    With ``options`` (compile options and ``target``) the version is computed exactly as ingest
    computes it. Without, the store's only version of this source text is taken, and several
    versions mean none (the planner cannot tell which one the runner will build).
    """
    if options is not None:
        opts = dict(options)
        target = opts.pop("target", None)
        vid = program_version_id(src, opts, target)
        found = store.rows("SELECT program_version FROM program_version WHERE program_version = ?",
                           [vid])
        return Versions([vid] if found else [],
                        f"program version {vid} (from the source and the given options)")
    rows = store.rows(
        "SELECT program_version, options::VARCHAR AS options FROM program_version "
        "WHERE source_sha256 = ? AND program = ? AND parent_version IS NULL "
        "ORDER BY program_version", [src.sha256, src.stem])
    if len(rows) == 1:
        return Versions([rows[0]["program_version"]],
                        f"the store's only version of {src.name} with this exact source text "
                        f"({rows[0]['program_version']}, options {rows[0]['options']})")
    if rows:
        return Versions([], f"{len(rows)} versions of {src.name} in the store "
                            f"({', '.join(r['program_version'] for r in rows)}); pass the compile "
                            f"options to say which one this plan measures")
    return Versions([], f"no version of {src.name} with this source text in the store")


@dataclass(frozen=True)
class _Need:
    """What a collect action needs of a stored run: its collector, and SQL conditions on
    ``run`` with the reason a run failing each one is not reused."""

    collector: str
    conditions: tuple[tuple[str, str], ...]


_NEEDS = {
    "cupti_timing": _Need("cupti", (
        ("timing_clean AND NOT forced_wait", "its timing is not clean ({signature})"),)),
    "ncu_source": _Need("ncu", (
        ("counter_replay", "not an Nsight Compute replay"),
        ("NOT instrumentation AND NOT forced_wait", "probes were active ({signature})"),
        ("coalesce(clock_control, 'none') = 'none'",
         "clocks were locked ({signature}); the plan collects with --clock-control none"))),
    "proton_pcsampling": _Need("proton", (
        ("pc_sampling", "not a Proton PC-sampling run"),
        ("NOT instrumentation AND NOT forced_wait", "probes were active ({signature})"))),
}

#: A collection of a *variant*: the variant's own probe is expected, anything else perturbing
#: is not.
_VARIANT_NEEDS = {
    "cupti_timing": _Need("cupti", (
        ("NOT (counter_replay OR instrumentation OR pc_sampling OR serialized)",
         "perturbed beyond the probe ({signature})"),)),
    "proton_instr": _Need("proton", (
        ("instrumentation", "not a Proton instrumentation run"),
        ("NOT (counter_replay OR pc_sampling OR forced_wait)",
         "perturbed beyond the instrumentation ({signature})"))),
}


def variant_versions(store: Store, parents: Versions, transform: str) -> Versions:
    """Stored variants made from one of ``parents`` by ``transform`` (same label)."""
    if not parents.ids:
        return Versions([], parents.why)
    rows = store.rows(
        f"SELECT program_version FROM program_version WHERE transform = ? AND parent_version IN "
        f"({', '.join('?' for _ in parents.ids)}) ORDER BY program_version",
        [transform, *parents.ids])
    ids = [r["program_version"] for r in rows]
    return Versions(ids, f"variant {', '.join(ids)} ({transform}) of {parents.why}" if ids
                    else f"no {transform} variant of {parents.why}")


def _signals(task: Task) -> list[str]:
    return list(task.params.get("signals") or [])


def find(store: Store, task: Task, versions: Versions, kernel_region: str, kernel: str,
         scope: dict[str, str]) -> tuple[dict[str, Any] | None, list[str]]:
    """A stored run ``task`` can reuse, and notes on stored runs it could not.

    Returns:
        ``({"run_id", "why"}, notes)`` or ``(None, notes)``.
    """
    variant = task.params.get("version", "parent") != "parent"
    need = (_VARIANT_NEEDS if variant else _NEEDS).get(task.action)
    if need is None or not versions.ids:
        return None, []
    signals = _signals(task)
    if task.action != "proton_instr":
        # Only instrumentation resolves intra-kernel coordinates; other collections of the plan
        # (e.g. the clean reference timing) are asked at launch scope.
        scope = {**scope, **dict.fromkeys(INTRA_KERNEL_SCOPE, "all")}
    conditions = need.conditions + _page(task)
    checks = ", ".join(f"({cond}) AS ok{i}" for i, (cond, _) in enumerate(conditions))
    runs = store.rows(
        f"SELECT run_id, program_version, kind, signature, replay_passes, clock_control, "
        f"{checks} FROM run "
        f"WHERE collector = ? AND program_version IN ({', '.join('?' for _ in versions.ids)}) "
        f"ORDER BY ingested_at DESC, run_id", [need.collector, *versions.ids])
    notes: list[str] = []
    for r in runs:
        failed = [why.format(**r) for i, (_, why) in enumerate(conditions)
                  if not r[f"ok{i}"]]
        if failed:
            notes.append(f"run {r['run_id']} not reused: {'; '.join(failed)}")
            continue
        missing = _missing(store, r["run_id"], signals, kernel_region, kernel, scope)
        if missing == "":
            continue
        missing = missing or _not_simultaneous(store, task, r)
        if missing:
            notes.append(f"run {r['run_id']} not reused: {missing}")
            continue
        unstated = (" (the artefact does not state its clock control)"
                    if task.action == "ncu_source" and r["clock_control"] is None else "")
        at = ", ".join(f"{k}={v}" for k, v in scope.items() if v != "all" or k == "launch")
        return {"run_id": r["run_id"], "program_version": r["program_version"],
                "why": f"run {r['run_id']} ({r['signature']}) of {versions.why} already holds "
                       f"{', '.join(signals)} for {kernel} at {at}{unstated}"}, notes
    return None, notes


def _page(task: Task) -> tuple[tuple[str, str], ...]:
    """The Nsight Compute page a task needs: the source page (per-instruction values) for a
    SourceCounters run, a kernel-level page (raw/details/report) for a metric list."""
    if task.action != "ncu_source":
        return ()
    if "SourceCounters" in (task.params.get("sections") or []):
        return (("kind = 'ncu.source_csv'",
                 "it is the {kind} export (kernel totals), not the source page with "
                 "per-instruction values this task collects"),)
    return (("kind <> 'ncu.source_csv'",
             "it is the source page, not a kernel-level page with the metric list"),)


def _missing(store: Store, run_id: str, signals: list[str], kernel_region: str, kernel: str,
             scope: dict[str, str]) -> str | None:
    """Why the run's rows do not cover the signals and scope, None when they do, and ``""``
    when the run holds none of the signals at all (so it is no candidate worth a note)."""
    launch = scope["launch"]
    specific = launch not in ("all", "each")
    # Intra-kernel coordinates asked per instance need rows resolved on them (not 'all').
    intra = [k for k in INTRA_KERNEL_SCOPE if scope[k] != "all"]
    resolved = "".join(f" AND {k} <> 'all'" for k in intra)
    rows = store.rows(
        f"SELECT signal, count(*) FILTER (WHERE (NOT ? OR launch = ?){resolved}) AS covering "
        "FROM observed_evidence WHERE run_id = ? AND (kernel = ? OR region_id = ?) "
        "GROUP BY signal", [specific, launch, run_id, kernel, kernel_region])
    if not {r["signal"] for r in rows} & set(signals):
        return ""  # another kind of artefact of this collector (e.g. the raw page)
    have = {r["signal"] for r in rows if r["covering"]}
    lacking = [s for s in signals if s not in have]
    if lacking:
        where = [f"launch={launch}"] if specific else []
        where += [f"{k} resolved" for k in intra]
        return f"has no {', '.join(lacking)} for {kernel}" + (
            f" at {', '.join(where)}" if where else "")
    return None


def _not_simultaneous(store: Store, task: Task, run: dict[str, Any]) -> str | None:
    """Why a stored replay cannot stand for a group of counters planned in one pass, or None.

    The plan packs counters into one pass so they are simultaneous; a stored run qualifies only
    when it was a single pass or records one shared replay pass for all of them.
    """
    metrics = list(task.params.get("metrics") or [])
    if len(metrics) < 2 or task.params.get("expected_passes") != 1 or run["replay_passes"] == 1:
        return None
    row = store.rows(
        "SELECT count(DISTINCT replay_pass) AS passes, count(*) - count(replay_pass) AS unknown "
        "FROM observed_evidence WHERE run_id = ? AND list_contains(?, signal)",
        [run["run_id"], metrics])[0]
    if row["passes"] == 1 and row["unknown"] == 0:
        return None
    return (f"it took {run['replay_passes'] or 'an unstated number of'} replay passes and does "
            f"not record one shared pass for {', '.join(metrics)}, so they would not be known to "
            f"be simultaneous")
