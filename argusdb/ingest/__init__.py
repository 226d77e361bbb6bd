"""Ingest: artefact → reader → program match → program version → one transaction per run.

Example:
    >>> with open_store("argus.duckdb", create=True) as st:
    ...     got = ingest_path(st, "softmax.ttgir", program=ProgramSource.from_path("softmax.py"))
    >>> got.kind
    'triton.ttgir'
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from argusdb.collectors.base import Artefact, normalize_target
from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.collectors.validate import check_options, cross_check
from argusdb.errors import InputError, UsageError
from argusdb.ingest.identity import (
    LAUNCH_KEYS,
    _launch_place,
    artefact_device,
    artefact_identity,
    check_program,
    file_sha256,
    program_version_id,
    read_artefact,
)
from argusdb.ingest.paths import expand_paths
from argusdb.ingest.pool import ReadArtefacts, read_artefacts
from argusdb.ingest.variants import VariantOf, bind
from argusdb.schema import shape
from argusdb.store import materialize
from argusdb.store.embedded import Store
from argusdb.store.versions import other_kernels_version

__all__ = ["INGEST_MEMORY_LIMIT", "IngestResult", "Prepared", "expand_paths", "ingest_path",
           "ingest_paths", "parse_options", "prepare", "program_version_id", "read_artefact"]

#: ``argus -v`` shows what each ingest wrote.
_log = logging.getLogger("argusdb.ingest")


@dataclass
class IngestResult:
    """What one ingest wrote (or found already written)."""

    path: str
    run_id: str
    program_version: str
    kind: str
    rows: dict[str, int] = field(default_factory=dict)
    already: bool = False
    #: The timeline run of a trace's kernels that are not the program's (run_id,
    #: program_version, kernels, rows); None when every kernel is the program's.
    other: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "run_id": self.run_id, "program_version": self.program_version,
                "kind": self.kind, "rows": self.rows, "already_ingested": self.already,
                "other_kernels": self.other}


def parse_options(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings → dict. Raises UsageError on a malformed pair, or a key or value
    outside the option grammar (:func:`argusdb.collectors.validate.check_options`)."""
    out: dict[str, str] = {}
    for p in pairs:
        if "=" not in p or not p.split("=", 1)[0].strip():
            raise UsageError(f"--option {p!r}: expected KEY=VALUE, e.g. --option num_warps=4")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return check_options(out)


def ingest_path(store: Store, path: str | Path, program: ProgramSource | None = None,
                options: dict[str, str] | None = None,
                variant: VariantOf | None = None, task_id: str | None = None,
                launch: dict[str, Any] | None = None,
                artefact: Artefact | None = None) -> IngestResult:
    """Ingest one artefact as one run, atomically and idempotently (see :func:`ingest_paths`).

    With ``variant`` the program version is bound to its parent and transform task
    (see :mod:`argusdb.ingest.variants`). ``launch`` (``rank``, ``world_size``, ``launch_group``,
    ``device_index``) places the run in a multi-process launch where the artefact does not say
    (it must agree where it does). With ``task_id`` the run belongs to that (plan) task, whose
    row the caller writes (the runner); otherwise the ingest is a collect task of its own.
    ``artefact`` is ``path`` already read (:func:`read_artefact`).

    Raises:
        InputError: unknown, corrupt or mismatching input; nothing is written.
    """
    return ingest_paths(store, [path], program, options, variant, task_id, launch,
                        artefacts=[artefact] if artefact is not None else None)[0]


@dataclass
class _Planned:
    """One artefact, read and bound to its version(s), before anything is written."""

    path: Path
    art: Artefact
    sha: str
    version: str
    target: str | None
    identity: dict[str, Any] | None
    kernels: list[str]
    # Place in a multi-process launch (LAUNCH_KEYS), from the artefact and the caller.
    place: dict[str, Any]
    # Kernels of a trace that are not @triton.jit functions of --program: their rows go to a
    # timeline run of an unbound version of their own (None when there are none).
    other: list[str] | None = None
    other_version: str | None = None
    other_identity: dict[str, Any] | None = None
    # The artefact's other kernels alone (no program version): names their timeline run, so
    # that ingesting the artefact again finds it.
    other_timeline: str | None = None


def _shared_target(arts: list[tuple[Path, Artefact]], given: str | None) -> str | None:
    """The one target the artefacts of a --program ingest state, or InputError naming the
    conflict (artefacts of one compile must not split into versions per file)."""
    stated: dict[str, list[str]] = {}
    if given:
        stated.setdefault(given, []).append("--option target")
    for p, art in arts:
        if art.target:
            stated.setdefault(art.target, []).append(p.name)
    if len(stated) > 1:
        what = "; ".join(f"{t}: {', '.join(names)}" for t, names in sorted(stated.items()))
        raise InputError(", ".join(str(p) for p, _ in arts),
                         f"state different GPU targets for one --program ({what}), so they "
                         f"are not artefacts of one compile",
                         "ingest the artefacts of each compile with their own 'argus ingest' "
                         "command (the target enters the program version), or correct "
                         "--option target; nothing was written")
    return next(iter(stated), None)


def _one_compile(arts: list[tuple[Path, Artefact]]) -> None:
    """Refuse artefacts of one --program ingest whose machine code differs for the same
    kernels (a variant's listing next to its parent's counters)."""
    codes: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for p, art in arts:
        if code := art.meta.get("code_sha256"):
            codes.setdefault(tuple(sorted(set(art.kernels))), {}).setdefault(
                str(code), []).append(p.name)
    for kernels, by_code in codes.items():
        if len(by_code) > 1:
            what = "; ".join(f"{c[:12]}: {', '.join(n)}" for c, n in sorted(by_code.items()))
            raise InputError(", ".join(str(p) for p, _ in arts),
                             f"hold different machine code for {', '.join(kernels)} "
                             f"(instruction fingerprints {what}), so they are not artefacts "
                             f"of one compile", "ingest each compile with its own 'argus "
                             "ingest' command (a variant with --parent-version and "
                             "--transform); nothing was written")


def _plan(paths: list[Path], program: ProgramSource | None, options: dict[str, str],
          launch: dict[str, Any] | None, read: list[Artefact]) -> list[_Planned]:
    given = normalize_target(options.pop("target", None))
    arts = list(zip(paths, read, strict=True))
    for p, art in arts:
        if given and art.target and given != art.target:
            raise InputError(str(p), f"was compiled for {art.target}, but --option target="
                             f"{given} was given", "drop --option target or correct it")
    shared = _shared_target(arts, given) if program else None
    if program:
        _one_compile(arts)
    cross_check(read)
    # Without --program, artefacts of one command holding the same machine code (the ncu source
    # page and the nvdisasm listing of one compile) share the target one of them states.
    code_targets: dict[str, set[str]] = {}
    for _, art in arts:
        if (code := art.meta.get("code_sha256")) and art.target:
            code_targets.setdefault(str(code), set()).add(art.target)
    out = []
    for p, art in arts:
        if program:
            kernels = check_program(art, program)
            target = shared
            pl = _Planned(p, art, file_sha256(p), program_version_id(program, options, target),
                          target, None, kernels, _launch_place(art, launch, str(p)))
            other = sorted(set(art.kernels) - set(kernels))
            if kernels and other:
                pl.other = other
                # The other kernels ran on the same device as the program's, in a run of this
                # program version: their version is of both (never shared by two versions).
                pl.other_timeline = program_version_id(None, {}, target,
                                                       artefact_identity(art, other))
                pl.other_version = other_kernels_version(pl.other_timeline, pl.version)
                pl.other_identity = {**artefact_identity(art, other),
                                     "kernels_of": pl.version}
        else:
            same = code_targets.get(str(art.meta.get("code_sha256")), set())
            target = art.target or given or (next(iter(same)) if len(same) == 1 else None)
            identity = artefact_identity(art)
            sha = file_sha256(p)
            if not (identity["n_kernels"] or identity["application"] or identity["device"]):
                # It names nothing it measured: the artefact alone is its identity.
                identity["artefact_sha256"] = sha
            pl = _Planned(p, art, sha, program_version_id(None, options, target, identity),
                          target, identity, [], _launch_place(art, launch, str(p)))
        out.append(pl)
    return out


@dataclass
class Prepared:
    """The artefacts of one ingest command, read, checked and bound to their versions; nothing
    written yet (:func:`prepare`)."""

    plans: list[_Planned]
    options: dict[str, str]
    #: Worker processes that read the artefacts (0: read in the command's process), whether
    #: they parsed every artefact's rows ahead, and the DuckDB threads for the command's
    #: appends: one while rows are parsed beside them (DuckDB's parallel insert then competes
    #: with the parse for the cores and cost about twice the CPU), the idle cores where every
    #: row was parsed ahead (:class:`argusdb.ingest.pool.ReadArtefacts`).
    workers: int = 0
    parsed_ahead: bool = False
    append_threads: int = 1

    def rows_hint(self) -> list[int | None]:
        """Per artefact, about how many rows its reader yields (None: unknown), for a
        progress bar (:attr:`argusdb.collectors.base.Artefact.rows_hint`)."""
        return [pl.art.rows_hint for pl in self.plans]


def prepare(paths: Sequence[str | Path], program: ProgramSource | None = None,
            options: dict[str, str] | None = None, launch: dict[str, Any] | None = None,
            artefacts: list[Artefact] | None = None) -> Prepared:
    """Read and check every artefact of a command, and bind each to its program version,
    without touching a store: a refused command leaves the store as it was, byte for byte.

    Raises:
        InputError: unknown, corrupt, mismatching or conflicting input.
    """
    opts = check_options(dict(options or {}))
    files = [Path(p) for p in paths]
    got = read_artefacts(files) if artefacts is None else ReadArtefacts(artefacts)
    return Prepared(_plan(files, program, opts, launch, got.artefacts), opts, got.workers,
                    got.parsed_ahead, got.append_threads)


def ingest_paths(store: Store, paths: list[str | Path] | tuple[str | Path, ...],
                 program: ProgramSource | None = None, options: dict[str, str] | None = None,
                 variant: VariantOf | None = None, task_id: str | None = None,
                 launch: dict[str, Any] | None = None, *,
                 progress: Callable[[IngestResult], None] | None = None,
                 artefacts: list[Artefact] | None = None,
                 prepared: Prepared | None = None,
                 progress_rows: Callable[[int], None] | None = None) -> list[IngestResult]:
    """Ingest the artefacts of one command, each as one run, in one transaction.

    Identity:

    - with ``program``, every artefact shares the GPU target any of them (or
      ``--option target``) states, so a source CSV that states none meets the SASS/TTGIR of the
      same compile in one version; artefacts stating different targets are refused, naming
      them. Kernels of a trace that are not @triton.jit functions of the program (cuBLAS,
      torch's RNG kernels) are kept as a separate *timeline* run of an unbound version of
      their own, so the program's version holds its own kernels only;
    - without ``program``, a version's address includes what the artefact says about itself
      (:func:`artefact_identity`: kernel names, application, device model, instruction
      fingerprint), so artefacts of different programs, compiles or GPU models never share a
      version; artefacts of the command with the same fingerprint share the target one of
      them states (the source page and the listing of one compile meet).

    ``artefacts`` are ``paths`` already read (:func:`read_artefact`); ``prepared`` is the
    command already read and checked by :func:`prepare`, as the CLI does before it opens the
    store. ``progress`` is called with each artefact's result as it is written,
    ``progress_rows`` with the number of rows of each batch of the current artefact (a large
    file's progress).

    Raises:
        InputError: unknown, corrupt, mismatching or conflicting input; nothing is written.
    """
    if prepared is None:
        prepared = prepare(paths, program, options, launch, artefacts)
    plans, opts = prepared.plans, prepared.options

    def attempt() -> list[IngestResult]:
        results: list[IngestResult] = []
        # (the appender's pool closes first, so no append runs when the transaction ends)
        with store.transaction(), ThreadPoolExecutor(max_workers=1) as pool, \
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="argus-append") as appender:
            pending = _Pending(appender=appender, on_rows=progress_rows)
            pending.plan_runs(store, plans)
            # A small file's next neighbour is parsed (Python) while this one is inserted
            # (DuckDB, without the GIL); a large file streams its batches as it is read.
            ahead = [pool.submit(_parsed, pl) if _small(pl) else None for pl in plans[:1]]
            for i, pl in enumerate(plans):
                if i + 1 < len(plans):
                    nxt = plans[i + 1]
                    ahead.append(pool.submit(_parsed, nxt) if _small(nxt) else None)
                pending.parsed = ahead[i]
                ahead[i] = None
                t0 = time.perf_counter()
                results.append(_write(store, pl, program, opts, variant, task_id, pending))
                r = results[-1]
                _log.info("ingest %s: %s, run %s, %s (%.2f s)", r.path, r.kind, r.run_id,
                          "already ingested" if r.already else
                          ", ".join(f"{n} {t}" for t, n in r.rows.items()),
                          time.perf_counter() - t0)
                if progress is not None:
                    progress(results[-1])
            # the command's rows still held, then its version, span, run and task rows, one
            # statement each
            pending.flush(store)
            pending.write_versions(store)
            store.insert_rows("run", pending.runs)
            store.insert_rows("task", pending.tasks)
            # Attribution and derivation commit with the runs that change their inputs (one
            # refresh for the command; versions without a program cost attribution nothing).
            if any(not r.already for r in results):
                materialize.refresh(store, materialize.Written(
                    frozenset(pending.tables), min(pending.seq_of.values()))
                    if pending.seq_of else None)
        return results

    # On a shared store an attempt that another writer's commit overtook runs again. The
    # appends run on the threads the command's reading leaves them (Prepared.append_threads).
    threads, store.append_threads = store.append_threads, prepared.append_threads
    try:
        done: list[IngestResult] = store.retrying(attempt)
    finally:
        store.append_threads = threads
    return done


#: Files up to this size are parsed ahead of their turn, whole (bounded: one file ahead).
PARSE_AHEAD_BYTES = 16 << 20


def _small(pl: _Planned) -> bool:
    try:
        return pl.path.stat().st_size <= PARSE_AHEAD_BYTES
    except OSError:
        return False


def _parsed(pl: _Planned) -> list[tuple[str, pa.RecordBatch]]:
    return list(pl.art.batches())


class _RowIds:
    """Whether each run's evidence rows have distinct ``src_row`` (so distinct evidence ids; the
    table has no key index to refuse a repeat): in Arrow while a run's batches come in rising
    order, else by one query over the run's id range after its rows are written."""

    def __init__(self) -> None:
        self.top: dict[str, int] = {}
        self.unsure: set[str] = set()

    def see(self, run_id: str | None, dest: str, batch: pa.RecordBatch) -> None:
        if dest != "observed_evidence" or not batch.num_rows or run_id is None:
            return
        col = batch.column("src_row")
        lo, hi = pc.min_max(col).values()
        if col.null_count or lo.as_py() <= self.top.get(run_id, -1) \
                or pc.count_distinct(col).as_py() != batch.num_rows:
            self.unsure.add(run_id)
        self.top[run_id] = max(self.top.get(run_id, -1), int(hi.as_py()))

    def check(self, store: Store, path: str, seqs: dict[str | None, Any]) -> None:
        for run_id in sorted(self.unsure):
            seq = int(seqs[run_id])
            row = store.sql("SELECT count(*) - count(DISTINCT evidence_id) FROM "
                            "observed_evidence WHERE evidence_id >= evidence_id_of(?, 0) "
                            "AND evidence_id < evidence_id_of(?, 0)", [seq, seq + 1]).fetchone()
            if row is None or row[0]:
                raise InputError(path, f"the reader gave {row[0] if row else '?'} evidence "
                                 "rows a row number (src_row) that another row of the run "
                                 "already has", "report it as a collector bug; nothing was "
                                 "written")


@dataclass
class _Pending:
    """Rows of one command written at its end (one statement per table, not one per file),
    and what the command has written so far."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    run_ids: set[str] = field(default_factory=set)
    versions: set[str] = field(default_factory=set)
    #: Version and region span rows not yet written (:meth:`write_versions`).
    version_rows: list[dict[str, Any]] = field(default_factory=list)
    span_rows: list[dict[str, Any]] = field(default_factory=list)
    #: Run ids of the command the store already holds, and the run_seq of each new one
    #: (:meth:`plan_runs`: one query and one draw for the command, not two per file).
    present: set[str] = field(default_factory=set)
    seq_of: dict[str, int] = field(default_factory=dict)
    #: The batches of the artefact being written, parsed ahead (None: read them now).
    parsed: Future[list[tuple[str, pa.RecordBatch]]] | None = None
    #: Keyed rows not yet appended, per table and Arrow schema: one append per table for
    #: the command's small files rather than one per file and table (flushed at
    #: :data:`APPEND_ROWS` rows or :data:`APPEND_BYTES` bytes, so memory stays bounded by
    #: that, not by the command or the file).
    held: dict[tuple[str, pa.Schema], list[pa.RecordBatch]] = field(default_factory=dict)
    held_rows: int = 0
    held_bytes: int = 0
    #: Tables the command appended rows to (what its refresh need not read again).
    tables: set[str] = field(default_factory=set)
    #: Called with the rows of each batch taken (a progress bar's).
    on_rows: Callable[[int], None] | None = None
    #: Where held rows are appended while the next files are parsed (DuckDB inserts without
    #: the GIL), one append at a time (None: append in the caller's thread).
    appender: ThreadPoolExecutor | None = None
    appending: Future[None] | None = None

    def append(self, store: Store, table: str, batch: pa.RecordBatch) -> int:
        """Hold ``batch`` (keyed) for ``table``; append what is held once it is large."""
        if batch.num_rows:
            self.tables.add(table)
            self.held.setdefault((table, batch.schema), []).append(batch)
            self.held_rows += batch.num_rows
            self.held_bytes += batch.nbytes
            if self.held_rows >= APPEND_ROWS or self.held_bytes >= APPEND_BYTES:
                self.hand_off(store)
            if self.on_rows is not None:
                self.on_rows(batch.num_rows)
        return batch.num_rows

    def hand_off(self, store: Store) -> None:
        """Start appending every held row on the appender (after the append before it), one
        statement per table (and schema), keyed as it goes in
        (:func:`argusdb.schema.shape.key_select`); the caller goes on parsing."""
        self.wait()
        held, self.held, self.held_rows, self.held_bytes = self.held, {}, 0, 0
        if not held:
            return
        if self.appender is None:
            _append_held(store, held)
        else:
            self.appending = self.appender.submit(_append_held, store, held)

    def wait(self) -> None:
        """Wait for the append in flight (its error is raised here): the store's connection is
        free for the caller's statements after this."""
        running, self.appending = self.appending, None
        if running is not None:
            running.result()

    def flush(self, store: Store) -> None:
        """Append every held row, and wait for it."""
        self.hand_off(store)
        self.wait()

    def plan_runs(self, store: Store, plans: list[_Planned]) -> None:
        """Which runs of ``plans`` are new, and their run_seq, in the order :func:`_write`
        meets them (a run the store or an earlier file of the command holds is not new; the
        timeline run of a file whose own run is not new is not considered)."""
        ids = [_run_ids(pl) for pl in plans]
        self.present = store.runs_present([r for pair in ids for r in pair if r])
        new: list[str] = []
        seen: set[str] = set()
        for run_id, other_id in ids:
            if run_id in seen or run_id in self.present:
                continue
            seen.add(run_id)
            new.append(run_id)
            if other_id:
                if other_id not in seen and other_id not in self.present:
                    new.append(other_id)
                seen.add(other_id)
        self.seq_of = dict(zip(new, store.next_run_seqs(len(new)), strict=True))

    def write_versions(self, store: Store) -> None:
        """Write the version and region span rows held so far (INSERT OR IGNORE: a version
        the store holds keeps its row)."""
        self.wait()
        store.insert_rows("program_version", self.version_rows)
        store.insert_rows("region_span", self.span_rows)
        self.version_rows, self.span_rows = [], []


def _append_held(store: Store, held: dict[tuple[str, pa.Schema], list[pa.RecordBatch]]) -> None:
    for (table, schema), batches in held.items():
        store.append_batch(table, pa.Table.from_batches(batches),
                           shape.key_select(table, schema.names))


#: DuckDB's memory limit for ``argus ingest`` (:func:`argusdb.api.connect`'s ``memory_limit``).
#: A transaction's appended rows stay in DuckDB's memory, uncompressed (~1.4 KB per nsys launch),
#: until they pass the limit, and are then written to the store file: with the 4GB of a
#: question's connection a 1 GB export grew the process past 4 GB.
INGEST_MEMORY_LIMIT = "512MB"
#: Arrow bytes an ingest command holds before appending them: a trace's launches carry
#: thirty columns and kernel names of up to kilobytes, several hundred bytes a row.
APPEND_BYTES = 32 << 20


#: Rows an ingest command holds before appending them (about 100 bytes each; up to twice
#: this is held while one append runs beside the parse). About two of DuckDB's row groups
#: (122,880 rows): few statements, and the first append starts early.
APPEND_ROWS = 1 << 18


def _version_row(version: str, program: ProgramSource | None,
                 options: dict[str, str], target: str | None,
                 identity: dict[str, Any] | None, pending: _Pending) -> None:
    if version in pending.versions:
        return  # this command wrote it (INSERT OR IGNORE: the first row stays)
    pending.versions.add(version)
    pending.version_rows.append({
        "program_version": version, "program": program.stem if program else None,
        "source_name": program.name if program else None,
        "source_sha256": program.sha256 if program else None,
        "source_text": program.text if program else None,
        "options": options, "target": target, "identity": identity})


def _timeline_version(store: Store, pending: _Pending, run_id: str) -> str | None:
    """The program version of a timeline run this command or an earlier ingest wrote."""
    for r in pending.runs:
        if r["run_id"] == run_id:
            return str(r["program_version"])
    row = store.sql("SELECT program_version FROM run WHERE run_id = ?", [run_id]).fetchone()
    return str(row[0]) if row else None


def _run_row(pending: _Pending, pl: _Planned, run_id: str, seq: int, version: str,
             task_id: str, device: dict[str, Any], meta: dict[str, Any],
             now: datetime) -> None:
    art, itf = pl.art, pl.art.interference
    pending.runs.append({
        "run_id": run_id, "run_seq": seq, "program_version": version, "task_id": task_id,
        "collector": art.collector, "kind": art.kind, "artefact_name": pl.path.name,
        "artefact_sha256": pl.sha, "tool": art.tool, "tool_version": art.tool_version,
        "export_schema": art.export_schema, "adapter_version": art.adapter_version,
        "signature": itf.signature(), "timing_clean": itf.timing_clean(),
        "activity_tracing": itf.activity_tracing, "torch_profiler": itf.torch_profiler,
        "counter_replay": itf.counter_replay, "replay_passes": itf.replay_passes,
        "section_set": itf.section_set, "pc_sampling": itf.pc_sampling,
        "instrumentation": itf.instrumentation, "forced_wait": itf.forced_wait,
        "serialized": itf.serialized, "clock_control": itf.clock_control,
        "cache_control": itf.cache_control, "launch_replay": itf.launch_replay,
        "device": device.get("name"),
        "device_info": device, "meta": meta, "ingested_at": now,
        **{k: pl.place.get(k) for k in LAUNCH_KEYS}})


def _split(batch: pa.RecordBatch, kernels: list[str]) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """Rows of the program's kernels, and the others (NULL kernel included)."""
    mine = pc.fill_null(pc.is_in(batch.column("kernel"), pa.array(kernels, pa.string())), False)
    return batch.filter(mine), batch.filter(pc.invert(mine))


def _run_ids(pl: _Planned) -> tuple[str, str | None]:
    """The run id of an artefact, and of its timeline run (None without one): content
    addresses of the artefact's bytes and the version."""
    run_id = hashlib.sha256(f"{pl.sha}:{pl.version}".encode()).hexdigest()[:16]
    if not (pl.other and pl.other_version):
        return run_id, None
    # The timeline run belongs to the artefact: ingesting it again for another program
    # version reuses it rather than storing its launches twice.
    return run_id, hashlib.sha256(f"{pl.sha}:{pl.other_timeline}".encode()).hexdigest()[:16]


def _write(store: Store, pl: _Planned, program: ProgramSource | None, options: dict[str, str],
           variant: VariantOf | None, task_id: str | None, pending: _Pending) -> IngestResult:
    art = pl.art
    run_id, other_id = _run_ids(pl)
    result = IngestResult(str(pl.path), run_id, pl.version, art.kind)
    if run_id in pending.run_ids or run_id in pending.present:
        result.already = True
        return result
    pending.run_ids.add(run_id)
    t0 = time.monotonic()
    own_task = task_id is None
    task_id = task_id or f"t-{run_id}"
    seq = pending.seq_of[run_id]
    first_of_version = pl.version not in pending.versions
    _version_row(pl.version, program, options, pl.target, pl.identity, pending)
    if program and first_of_version:
        for r in parse_regions(program):
            pending.span_rows.append({
                "program_version": pl.version, "region_id": r.region_id, "kernel": r.kernel,
                "name": r.name, "start_line": r.start_line, "end_line": r.end_line})
    rank = None if pl.place.get("rank") is None else str(pl.place["rank"])
    # What a run gives every row of it (the @key: run and @fill: run columns of argusdb/schema/).
    keys = {"run_seq": seq, "program_version": pl.version, "task_id": task_id, "run_id": run_id,
            "rank": rank}
    other_keys: dict[str, Any] | None = None
    other_new = False
    if other_id and pl.other_version:
        other_new = other_id not in pending.run_ids and other_id not in pending.present
        if not other_new:
            # the artefact's timeline run is there already: its kernels stay of its version
            pl.other_version = _timeline_version(store, pending, other_id) or pl.other_version
        pending.run_ids.add(other_id)
        other_keys = {"run_seq": pending.seq_of[other_id] if other_new else None,
                      "program_version": pl.other_version, "task_id": task_id,
                      "run_id": other_id, "rank": rank}
        if other_new:
            _version_row(pl.other_version, None, {"kernels_of": pl.version}, pl.target,
                         pl.other_identity, pending)
    rows: dict[str, int] = {}
    other_rows: dict[str, int] = {}
    stem = program.stem if program else None
    ids = _RowIds()
    try:
        for table, batch in (pending.parsed.result() if pending.parsed is not None
                             else art.batches()):
            dest = shape.routes().get(table, table)
            if other_keys is not None and "kernel" in batch.schema.names \
                    and not shape.stays_with_program_run(table):
                batch, rest = _split(batch, pl.kernels)
                if rest.num_rows and other_new:
                    ids.see(other_id, dest, rest)
                    other_rows[table] = other_rows.get(table, 0) + pending.append(
                        store, dest, shape.marked(table, rest, other_keys))
            ids.see(run_id, dest, batch)
            rows[table] = rows.get(table, 0) + pending.append(
                store, dest, shape.marked(table, batch, keys, pl.kernels, stem))
        if ids.unsure:
            pending.flush(store)
        ids.check(store, str(pl.path),
                  {run_id: seq, other_id: other_keys["run_seq"] if other_keys else None})
    except InputError:
        raise
    except (ValueError, KeyError, OSError, EOFError) as exc:
        raise InputError(str(pl.path), f"cannot be read as {art.kind} ({exc})",
                         "check that the file is complete; re-export it from the tool"
                         ) from exc
    now = datetime.now(UTC).replace(tzinfo=None)
    device = artefact_device(art)
    meta = dict(art.meta)
    if other_keys is not None:
        meta["other_kernels"] = {"run_id": other_id, "program_version": pl.other_version,
                                 "kernels": len(pl.other or []), "rows": other_rows,
                                 "already_ingested": not other_new}
    _run_row(pending, pl, run_id, seq, pl.version, task_id, device, meta, now)
    if other_new and other_keys and other_id and pl.other_version:
        _run_row(pending, pl, other_id, other_keys["run_seq"], pl.other_version, task_id, device,
                 {**art.meta, "timeline_of": {"run_id": run_id, "program_version": pl.version,
                                              "program": stem}}, now)
    if own_task:
        pending.tasks.append({
            "task_id": task_id, "kind": "collect", "plan_id": None,
            "config": {"ingest": pl.path.name, "collector": art.collector, "kind": art.kind,
                       "options": options},
            "status": "done", "wall_s": time.monotonic() - t0, "gpu_s": None,
            "finished_at": now})
    if variant is not None:
        pending.write_versions(store)   # bind reads the version's row
        bind(store, pl.version, variant)
    result.rows = rows
    if other_keys is not None:
        result.other = {"run_id": other_id, "program_version": pl.other_version,
                        "kernels": pl.other or [], "rows": other_rows,
                        "already_ingested": not other_new}
    return result
