"""Ingest: artefact → reader → program match → program version → one transaction per run.

Example:
    >>> with Store.open("argus.duckdb", create=True) as st:
    ...     ingest_path(st, "softmax.source.csv", program=ProgramSource.from_path("softmax.py"))
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argusdb import materialize
from argusdb.errors import InputError, UsageError
from argusdb.regions import ProgramSource, jit_functions, parse_regions
from argusdb.store import Store
from argusdb.variants import VariantOf, bind
from collectors import detect
from collectors.base import Artefact, normalize_target

_TABLES = {"evidence": "observed_evidence", "kernel_launch": "kernel_launch",
           "instruction": "instruction", "inline_site": "inline_site",
           "scope_event": "scope_event"}


@dataclass
class IngestResult:
    """What one ingest wrote (or found already written)."""

    path: str
    run_id: str
    program_version: str
    kind: str
    rows: dict[str, int] = field(default_factory=dict)
    already: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "run_id": self.run_id, "program_version": self.program_version,
                "kind": self.kind, "rows": self.rows, "already_ingested": self.already}


def parse_options(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings → dict. Raises UsageError on a malformed pair."""
    out: dict[str, str] = {}
    for p in pairs:
        if "=" not in p or not p.split("=", 1)[0].strip():
            raise UsageError(f"--option {p!r}: expected KEY=VALUE, e.g. --option num_warps=4")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def program_version_id(program: ProgramSource | None, options: dict[str, str],
                       target: str | None) -> str:
    """Content address of a program version (16 hex chars)."""
    doc = {"program": program.stem if program else None,
           "source_sha256": program.sha256 if program else None,
           "options": dict(sorted(options.items())), "target": target}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def check_program(art: Artefact, program: ProgramSource) -> list[str]:
    """Check that ``program`` is the source the artefact was built from.

    Matching is by file name and content (quoted lines), never by absolute path.

    Returns:
        The artefact's kernels that are @triton.jit functions of the program.

    Raises:
        InputError: quoted lines differ, lines are out of range, or no kernel matches.
    """
    lines = program.lines
    mine = [r for r in art.source_refs if r.file_name == program.name]
    for ref in mine:
        if ref.line < 1 or ref.line > len(lines):
            raise InputError(art.path, f"refers to {program.name} line {ref.line}, but the given "
                             f"--program has {len(lines)} lines",
                             "pass the exact source the kernel was compiled from")
        if ref.text is not None and ref.text.strip() != lines[ref.line - 1].strip():
            raise InputError(art.path, f"quotes {program.name} line {ref.line} as "
                             f"{ref.text.strip()!r}, but --program has "
                             f"{lines[ref.line - 1].strip()!r} there",
                             "pass the exact source the kernel was compiled from (a changed "
                             "source is a new program version: record it again)")
    if art.source_refs and not mine and any(r.file_name.endswith(".py") for r in art.source_refs):
        names = sorted({r.file_name for r in art.source_refs})
        raise InputError(art.path, f"refers to source files {names}, not {program.name}",
                         "pass --program the kernel source file the artefact was compiled from")
    jit = {f.name for f in jit_functions(program)}
    matched = sorted(k for k in set(art.kernels) if k in jit)
    if art.kernels and not matched:
        raise InputError(art.path, f"none of its kernels {sorted(set(art.kernels))[:5]} is a "
                         f"@triton.jit function of {program.name} ({sorted(jit)})",
                         "pass --program the file that defines the traced kernel")
    return matched


def ingest_path(store: Store, path: str | Path, program: ProgramSource | None = None,
                options: dict[str, str] | None = None,
                variant: VariantOf | None = None, task_id: str | None = None) -> IngestResult:
    """Ingest one artefact as one run, atomically and idempotently (see :func:`_ingest_once`);
    on a shared store an attempt that another writer's commit overtook runs again."""
    result: IngestResult = store.retrying(
        lambda: _ingest_once(store, path, program, options, variant, task_id))
    return result


def _ingest_once(store: Store, path: str | Path, program: ProgramSource | None = None,
                 options: dict[str, str] | None = None,
                 variant: VariantOf | None = None, task_id: str | None = None) -> IngestResult:
    """Ingest one artefact as one run, atomically and idempotently.

    With ``variant`` the program version is bound to its parent and transform task
    (see :mod:`argusdb.variants`). With ``task_id`` the run belongs to that (plan) task, whose
    row the caller writes (the runner); otherwise the ingest is a collect task of its own.

    Raises:
        InputError: unknown, corrupt or mismatching input; nothing is written.
    """
    p = Path(path)
    reader = detect(p)
    art = reader.read(p)
    options = dict(options or {})
    given = normalize_target(options.pop("target", None))
    if given and art.target and given != art.target:
        raise InputError(str(path), f"was compiled for {art.target}, but --option target="
                         f"{given} was given", "drop --option target or correct it")
    target = art.target or given
    kernels = check_program(art, program) if program else []
    version = program_version_id(program, options, target)
    sha = file_sha256(p)
    run_id = hashlib.sha256(f"{sha}:{version}".encode()).hexdigest()[:16]
    result = IngestResult(str(path), run_id, version, art.kind)
    if store.run_exists(run_id):
        result.already = True
        return result
    t0 = time.monotonic()
    own_task = task_id is None
    task_id = task_id or f"t-{run_id}"
    itf = art.interference
    with store.transaction():
        seq = store.next_run_seq()
        store.insert_row("program_version", {
            "program_version": version, "program": program.stem if program else None,
            "source_name": program.name if program else None,
            "source_sha256": program.sha256 if program else None,
            "source_text": program.text if program else None,
            "options": options, "target": target})
        if program:
            for r in parse_regions(program):
                store.insert_row("region_span", {
                    "program_version": version, "region_id": r.region_id, "kernel": r.kernel,
                    "name": r.name, "start_line": r.start_line, "end_line": r.end_line})
        keys = {"run_seq": seq, "program_version": version, "task_id": task_id,
                "run_id": run_id}
        rows: dict[str, int] = {}
        try:
            for table, batch in art.batches():
                dest = _TABLES[table]
                rows[table] = rows.get(table, 0) + store.append_batch(
                    dest, batch, keys, kernels, program.stem if program else None)
        except InputError:
            raise
        except (ValueError, KeyError, OSError, EOFError) as exc:
            raise InputError(str(path), f"cannot be read as {art.kind} ({exc})",
                             "check that the file is complete; re-export it from the tool"
                             ) from exc
        now = datetime.now(UTC).replace(tzinfo=None)
        store.insert_row("run", {
            "run_id": run_id, "run_seq": seq, "program_version": version, "task_id": task_id,
            "collector": art.collector, "kind": art.kind, "artefact_name": p.name,
            "artefact_sha256": sha, "tool": art.tool, "tool_version": art.tool_version,
            "export_schema": art.export_schema, "adapter_version": art.adapter_version,
            "signature": itf.signature(), "timing_clean": itf.timing_clean(),
            "activity_tracing": itf.activity_tracing, "torch_profiler": itf.torch_profiler,
            "counter_replay": itf.counter_replay, "replay_passes": itf.replay_passes,
            "section_set": itf.section_set, "pc_sampling": itf.pc_sampling,
            "instrumentation": itf.instrumentation, "forced_wait": itf.forced_wait,
            "serialized": itf.serialized, "clock_control": itf.clock_control,
            "cache_control": itf.cache_control, "device": art.device.get("name"),
            "device_info": art.device, "meta": art.meta, "ingested_at": now})
        if own_task:
            store.insert_row("task", {
                "task_id": task_id, "kind": "collect", "plan_id": None,
                "config": {"ingest": p.name, "collector": art.collector, "kind": art.kind,
                           "options": options},
                "status": "done", "wall_s": time.monotonic() - t0, "gpu_s": None,
                "finished_at": now})
        if variant is not None:
            bind(store, version, variant)
        # Attribution and derivation commit with the run that changes their inputs.
        materialize.refresh(store)
    result.rows = rows
    return result
