"""Collectors: one package per tool, each turning tool output into Arrow batches.

Every subpackage exposes ``READERS`` (see :mod:`collectors.base`). :func:`detect` finds the reader
for an artefact from its content, never from its name alone.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from argusdb.collectors.base import Reader, head_bytes
from argusdb.errors import InputError


@cache
def readers() -> tuple[Reader, ...]:
    """All readers of all collector packages, in package-name order."""
    found: list[Reader] = []
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.ispkg:
            pkg = importlib.import_module(f"{__name__}.{mod.name}")
            found.extend(getattr(pkg, "READERS", []))
    return tuple(found)


def detect(path: str | Path) -> Reader:
    """The reader for ``path``, chosen from its first bytes.

    Raises:
        InputError: the file is missing, empty or of no known format.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(str(path), "no such file", "check the path")
    head = head_bytes(p)
    if not head.strip():
        raise InputError(str(path), "the file is empty", "re-export it from the tool")
    for r in readers():
        if r.sniff(p, head):
            return r
    kinds = ", ".join(sorted({r.kind for r in readers()}))
    raise InputError(str(path), "unknown artefact format",
                     f"argus ingests these kinds: {kinds}")
