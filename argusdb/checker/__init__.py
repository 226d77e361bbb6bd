"""The checked query language: a pure check, then execution read-only.

Pipeline (one module each, as sqlglot lays out its own)::

    parse.py       SQL text → sqlglot tree (DuckDB dialect); positions from tokens
    rules/ (sandbox phase)   refuse anything but one read-only SELECT over the store, and
                   any function the catalogue (functions.csv) does not allow
    resolve.py / analysis.py names against the catalog; evidence streams and the
                   combinations they meet in, from a Metadata (metadata.py: a Protocol;
                   the store's implementation is argusdb/api/metadata.py)
    rules/ (names, compat phases)  one module per rule, stable codes AR01…

:func:`analyse` is a pure function of the text, the catalog and a Metadata: it never writes,
never runs the query and imports no store. A store's Metadata, and running an accepted
question on the store, are :mod:`argusdb.api.checked`'s (the layer above both).

Evidence-aware constructs (``version_diff``, ``evidence_accepting``) are table macros of
``argusdb/queries/checked.sql``; :mod:`argusdb.checker.constructs` says what they mean to the
checker.

Example:
    >>> from argusdb.api.checked import metadata_of
    >>> from argusdb.checker import analyse
    >>> from argusdb.store import open_store
    >>> with open_store("argus.duckdb", read_only=True) as store:
    ...     report = analyse("SELECT median(value) FROM evidence", metadata_of(store))
    >>> [f.code for f in report.findings][:1]
    ['AR01']
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

__all__ = ["TIMEOUT_S", "MemoryMetadata", "Metadata", "Report", "analyse", "check", "explain"]

#: Default limits of one user query.
TIMEOUT_S = 30.0

if TYPE_CHECKING:
    from argusdb.checker.metadata import MemoryMetadata, Metadata
    from argusdb.checker.verdict import Report, analyse
    from argusdb.errors import Finding

#: Exported names and the module each is loaded from when first used: importing a part of the
#: checker (``argusdb.checker.metadata``'s column lists) loads neither sqlglot nor the rules.
_LAZY = {"Report": "verdict", "analyse": "verdict", "MemoryMetadata": "metadata",
         "Metadata": "metadata"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def check(sql: str, meta: Metadata | None = None) -> list[Finding]:
    """Findings for ``sql``; an empty list means it may run."""
    return sys.modules[__name__].analyse(sql, meta).findings


def explain(sql: str, meta: Metadata | None = None) -> dict[str, Any]:
    """Provenance of the answer ``sql`` would get: versions, runs, tasks, classes, signatures,
    passes, scopes, per source and in total, with constructs, acknowledgements and findings."""
    return sys.modules[__name__].analyse(sql, meta).provenance()
