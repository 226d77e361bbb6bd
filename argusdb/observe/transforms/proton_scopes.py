"""``proton_scopes``: a variant with Proton intra-kernel scopes at the region markers.

Each region's statements (see :func:`argusdb.observe.transforms._edit.region_block`) are wrapped in
``enter_scope(name)`` / ``exit_scope(name)`` of ``triton.profiler.language``, named after the
region, so Proton's instrumentation backend records per-CTA, per-warp begin/end times of the
region. Triton-DSL instrumentation is off by default in Triton 3.6 (only Gluon is enabled), so the
variant enables the ``triton`` semantic when it is imported. Outside a Proton instrumentation
session the scopes are no-ops; under ``TRITON_INTERPRET=1`` the variant binds them to no-op
functions (Proton's builtins need the compiler), so its result can be checked on a CPU.

Example:
    >>> from argusdb.collectors.regions import ProgramSource
    >>> src = ProgramSource.from_path("softmax.py")
    >>> v = proton_scopes(src, ["load", "reduce"])
    >>> v.transform
    'proton_scopes:softmax/softmax_fwd/load,softmax/softmax_fwd/reduce'
"""

from __future__ import annotations

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.observe.transforms._edit import (
    SourceEdit,
    find_region,
    last_top_import_line,
    region_block,
)
from argusdb.observe.transforms.variant import Variant

_PL = "_argus_pl"
_PRELUDE = f"""
import os as _argus_os

if _argus_os.environ.get("TRITON_INTERPRET", "0") == "1":
    class {_PL}:  # argusdb: the interpreter runs the kernel without Proton's scopes
        enter_scope = exit_scope = staticmethod(lambda name: None)
else:
    import triton.profiler.language as {_PL}

    # argusdb: Triton-DSL scopes are recorded only once the 'triton' semantic is enabled.
    {_PL}.enable_semantic("triton")
""".splitlines()


def proton_scopes(src: ProgramSource, region_ids: list[str] | tuple[str, ...]) -> Variant:
    """Variant of ``src`` with a Proton scope around each named region.

    Raises:
        InputError: a region does not exist, or two named regions overlap in the same block.
    """
    if not region_ids:
        raise InputError(src.name, "no region given for proton scopes", "name one or more regions")
    edit = SourceEdit(src)
    taken: list[tuple[int, int, str]] = []
    regions = []
    for rid in region_ids:
        region = find_region(src, rid)
        block = region_block(src, region)
        for lo, hi, other in taken:
            if lo <= block.last_line and block.first_line <= hi:
                raise InputError(src.name, f"regions {other} and {region.region_id} overlap",
                                 "instrument nested regions in separate variants")
        taken.append((block.first_line, block.last_line, region.region_id))
        regions.append(region.region_id)
        name = region.name
        edit.insert_before(block.first_line, [f'{_PL}.enter_scope("{name}")'], block.indent)
        edit.insert_after(block.last_line, [f'{_PL}.exit_scope("{name}")'], block.indent)
    edit.insert_after(last_top_import_line(src), _PRELUDE, "")
    return Variant(ProgramSource(src.name, edit.text()), "proton_scopes:" + ",".join(regions),
                   options={}, regions=tuple(regions))
