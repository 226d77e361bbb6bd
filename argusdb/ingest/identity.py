"""Identity of an artefact and of the program it measured: content addresses, the device it
ran on, the program version its source, options and toolchain make, and the checks that a
program's source matches what the artefact measured (:func:`check_program`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from argusdb.collectors import detect
from argusdb.collectors.base import Artefact
from argusdb.collectors.regions import ProgramSource, jit_functions
from argusdb.errors import InputError, UsageError


def read_artefact(path: str | Path) -> Artefact:
    """Detect and read one artefact: every check a reader makes before any row is written."""
    p = Path(path)
    return detect(p).read(p)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def program_version_id(program: ProgramSource | None, options: dict[str, str],
                       target: str | None, identity: dict[str, Any] | None = None) -> str:
    """Content address of a program version (16 hex chars).

    ``identity`` (see :func:`artefact_identity`) enters the address of a version ingested
    without ``--program``; a version with a program source is addressed by the source, the
    options and the target alone, so every artefact of one compile meets in it.
    """
    doc: dict[str, Any] = {"program": program.stem if program else None,
                           "source_sha256": program.sha256 if program else None,
                           "options": dict(sorted(options.items())), "target": target}
    if identity is not None:
        doc["identity"] = identity
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def artefact_device(art: Artefact) -> dict[str, Any]:
    """The device facts an artefact states, with normalized keys next to the tool's own.

    ``name`` (the GPU's marketing name), ``target`` (``sm_XY``) and ``sm_count`` wherever the
    format states them (Nsight Compute device attributes, Nsight Systems ``TARGET_INFO_GPU``,
    Kineto ``deviceProperties``, Proton's device map); ``model`` is the name, or, where a format
    states no name (Proton), the target with its SM count: the device identity a version without
    ``--program`` and a device-mixing rule compare.
    """
    dev = dict(art.device)
    used = [d for d in dev.get("devices") or [] if isinstance(d, dict)
            and d.get("ran_kernels", True)]
    counts = {int(c) for d in used for c in (d.get("numSms"), d.get("smCount"), d.get("num_sms"))
              if isinstance(c, int | float)}
    if isinstance(mp := dev.get("multiprocessor_count"), int | float):
        counts.add(int(mp))
    if len(counts) == 1 and "sm_count" not in dev:
        dev["sm_count"] = counts.pop()
    target = art.target or dev.get("target")
    if target:
        dev["target"] = target
    if dev.get("name"):
        dev["model"] = dev["name"]
    elif target and dev.get("sm_count"):
        dev["model"] = f"{target} with {dev['sm_count']} SMs"
    return dev


def artefact_identity(art: Artefact, kernels: list[str] | None = None) -> dict[str, Any]:
    """What an artefact says about the program it measured, for a version without --program.

    The sorted kernel names (as a sha256 and a count), the application (process name) where
    the format states one, the device model, the binary's instruction fingerprint where the
    artefact holds the code (``code_sha256`` of the ncu source page and the nvdisasm listing,
    see :func:`argusdb.collectors.base.code_fingerprint`) and its launch shape where a trace or
    a raw page states it (threads per block, registers, shared memory per kernel; cupti-python,
    ncu raw page; see :func:`argusdb.collectors.base.launch_shapes`): two artefacts land in one
    unbound version only when all of these agree, so traces of different applications,
    different kernels, different GPU models or different compiles of one kernel never merge.
    """
    names = sorted(set(art.kernels if kernels is None else kernels))
    dev = artefact_device(art)
    return {"kernels_sha256": hashlib.sha256("\n".join(names).encode()).hexdigest(),
            "n_kernels": len(names), "kernels": names[:8],
            "application": art.meta.get("application"), "device": dev.get("model"),
            "code_sha256": art.meta.get("code_sha256") if kernels is None else None,
            "launch_shape_sha256": hashlib.sha256(json.dumps(
                art.meta["launch_shape"]).encode()).hexdigest()
            if kernels is None and art.meta.get("launch_shape") else None}


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


#: Keys of a run's place in a multi-process launch (columns of ``run``).
LAUNCH_KEYS = ("rank", "world_size", "launch_group", "device_index")


def _launch_place(art: Artefact, given: dict[str, Any] | None, path: str) -> dict[str, Any]:
    """The run's launch place: the artefact's, completed by ``given`` (a contradiction is an
    error)."""
    place = {k: art.launch.get(k) for k in LAUNCH_KEYS}
    for k, v in (given or {}).items():
        if k not in LAUNCH_KEYS:
            raise UsageError(f"launch key {k!r}: expected one of {', '.join(LAUNCH_KEYS)}")
        if v is None:
            continue
        if place.get(k) is not None and str(place[k]) != str(v):
            raise InputError(path, f"states {k} {place[k]}, but {v} was given",
                             f"drop the {k} option or correct it")
        place[k] = v
    for k in ("rank", "world_size", "device_index"):
        v = place.get(k)
        if v is not None:
            try:
                place[k] = int(v)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"{k}={v!r}: expected an integer") from exc
    rank, world = place.get("rank"), place.get("world_size")
    if rank is not None and world is not None and not 0 <= rank < world:
        raise InputError(path, f"rank {place['rank']} is outside world size "
                         f"{place['world_size']}", "check the rank and world size")
    return place
