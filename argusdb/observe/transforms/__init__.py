"""Source-to-source transforms that make program variants from a kernel source and a region.

Each transform is a pure function of the parent's source (and region IDs) returning a
:class:`Variant`; the runner binds it to its parent program version and to the transform task
(``program_version.parent_version``, ``transform``, ``transform_task_id``). Region IDs survive
every transform, so evidence of a variant stays keyed by the parent's regions.

| action | what the variant does |
| --- | --- |
| ``forced_wait`` | waits for a region's global loads before the next stage |
| ``proton_scopes`` | Proton enter/exit scopes at region markers (intra-kernel timing) |
| ``pipelining_off`` | same source, compiled with ``num_stages=1`` |

Example:
    >>> from argusdb.collectors.regions import ProgramSource
    >>> src = ProgramSource.from_path("argusdb/demo/kernels/softmax.py")
    >>> apply("forced_wait", src, {"region_id": "load"}).transform
    'forced_wait:softmax/softmax_fwd/load'
"""

from __future__ import annotations

from typing import Any

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.observe.transforms.forced_wait import forced_wait
from argusdb.observe.transforms.proton_scopes import proton_scopes
from argusdb.observe.transforms.variant import Variant

__all__ = ["ACTIONS", "Variant", "apply", "forced_wait", "pipelining_off", "proton_scopes"]


def pipelining_off(src: ProgramSource) -> Variant:
    """Variant compiled without software pipelining: same source, ``num_stages=1``."""
    return Variant(src, "pipelining_off", options={"num_stages": 1})


ACTIONS = ("forced_wait", "proton_scopes", "pipelining_off")


def apply(action: str, src: ProgramSource, params: dict[str, Any]) -> Variant:
    """Run the transform a plan task names (``action`` and ``params`` as in the plan).

    Raises:
        InputError: an unknown action or missing parameter.
    """
    if action == "forced_wait":
        rid = params.get("region_id") or params.get("region")
        if not rid:
            raise InputError(src.name, "forced_wait needs params.region_id", "name the region")
        return forced_wait(src, str(rid))
    if action == "proton_scopes":
        ids = params.get("region_ids") or params.get("regions") or []
        return proton_scopes(src, [str(r) for r in ids])
    if action == "pipelining_off":
        return pipelining_off(src)
    raise InputError(src.name, f"unknown transform {action!r}",
                     f"use one of: {', '.join(ACTIONS)}")
