"""Variants: program versions made from a parent by a transform, and their result checks.

A variant (a forced wait, Proton scopes, pipelining off) is a program version of its own, bound
to its parent version and to the transform task that made it (``program_version.parent_version``,
``transform``, ``transform_task_id``). Its evidence is used for derivation only once a result
check (``variant_check``) says it computes what the parent computes.

Example:
    >>> ingest_path(st, "softmax.fw_load.cupti.jsonl", variant_src,  # doctest: +SKIP
    ...             variant=VariantOf(parent, "forced_wait:softmax/softmax_fwd/load"))
    >>> record_check(st, variant_version, parent,  # doctest: +SKIP
    ...              rel_err=3e-8, tolerance=1e-5)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from argusdb.errors import UsageError
from argusdb.store import materialize
from argusdb.store.embedded import Store


@dataclass(frozen=True)
class VariantOf:
    """How an ingested version derives from its parent.

    Attributes:
        parent_version: the parent's program version (already in the store).
        transform: what was applied, e.g. ``'forced_wait:softmax/softmax_fwd/load'``.
        task_id: the transform task that made the variant; a manual binding gets
            ``'x-<variant version>'``.
    """

    parent_version: str
    transform: str
    task_id: str | None = None


def bind(store: Store, version: str, variant: VariantOf) -> str:
    """Bind ``version`` to its parent (inside the caller's transaction); returns the task id.

    Raises:
        UsageError: the parent is not in the store, the version is its own parent, or the
            version is already bound to another parent or transform.
    """
    if version == variant.parent_version:
        raise UsageError(f"version {version} cannot be its own parent: a variant has other "
                         "source text or options than its parent")
    if not store.sql("SELECT 1 FROM program_version WHERE program_version = ?",
                     [variant.parent_version]).fetchone():
        raise UsageError(f"parent version {variant.parent_version} is not in the store; ingest "
                         "an artefact of the parent first (argus runs lists the versions)")
    row = store.sql("SELECT parent_version, transform, transform_task_id FROM program_version "
                    "WHERE program_version = ?", [version]).fetchone()
    assert row is not None
    task_id = variant.task_id or row[2] or f"x-{version}"
    if row[0] is not None and (row[0], row[1]) != (variant.parent_version, variant.transform):
        raise UsageError(f"version {version} is already a variant of {row[0]} by {row[1]!r}; "
                         f"it cannot also be one of {variant.parent_version} by "
                         f"{variant.transform!r}")
    store.sql("UPDATE program_version SET parent_version = ?, transform = ?, "
              "transform_task_id = ? WHERE program_version = ?",
              [variant.parent_version, variant.transform, task_id, version])
    store.insert_row("task", {
        "task_id": task_id, "kind": "transform", "plan_id": None,
        "config": {"transform": variant.transform, "parent_version": variant.parent_version,
                   "variant_version": version},
        "status": "done", "wall_s": None, "gpu_s": None,
        "finished_at": datetime.now(UTC).replace(tzinfo=None)})
    return task_id


def record_check(store: Store, variant_version: str, parent_version: str, rel_err: float,
                 tolerance: float = 1e-5, task_id: str | None = None) -> bool:
    """Record a result check of a variant against its parent; refreshes derivation.

    Returns:
        Whether the check passed (``rel_err <= tolerance``).

    Raises:
        UsageError: the variant is not bound to that parent.
    """
    row = store.sql("SELECT parent_version FROM program_version WHERE program_version = ?",
                    [variant_version]).fetchone()
    if row is None or row[0] != parent_version:
        raise UsageError(f"version {variant_version} is not a variant of {parent_version}; "
                         "ingest it with --parent-version and --transform first")
    passed = bool(rel_err <= tolerance)
    with store.transaction():
        store.sql("INSERT INTO variant_check VALUES (?, ?, ?, ?, ?, ?, ?)",
                  [variant_version, parent_version, task_id, rel_err, tolerance, passed,
                   datetime.now(UTC).replace(tzinfo=None)])
        materialize.refresh(store)
    return passed


def footprint_note(conditions: dict[str, Any]) -> str | None:
    """What a derived value's probe footprint (``conditions['footprint']``, from
    ``derivation_probe``) means for reading it, or None when the variant differs from its parent
    by the wait alone.

    Example:
        >>> footprint_note({"footprint": {"status": "restructured", "changes": [
        ...     {"opcode": "LDS", "parent": 9, "variant": 18}]}})[:63]
        'probe footprint restructured (LDS 9 -> 18 per kernel): an upper'
    """
    fp = conditions.get("footprint") if isinstance(conditions, dict) else None
    if not isinstance(fp, dict) or fp.get("status") == "probe_only":
        return None
    if fp.get("status") == "restructured":
        changes = ", ".join(f"{c['opcode']} {c['parent']} -> {c['variant']}"
                            for c in fp.get("changes") or [])
        return (f"probe footprint restructured ({changes} per kernel): an upper bound, the "
                "variant's extra time includes moving its data differently, not only the wait; "
                "read the region's stall reasons (stall_long_sb, warp_stall_samples) for the "
                "latency it exposes")
    return ("probe footprint unverified: no SASS listing of the variant or the parent in the "
            "store, so whether the variant differs by the wait alone is not known; ingest both "
            "listings (nvdisasm -g of each binary, or an Nsight Compute source page) or observe "
            "again")
