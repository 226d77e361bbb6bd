"""A program variant made by a transform: new source text and/or compile options.

Example:
    >>> from argusdb.collectors.regions import ProgramSource
    >>> src = ProgramSource.from_path("kernels/matmul.py")
    >>> from argusdb.observe.transforms import pipelining_off
    >>> v = pipelining_off(src)
    >>> v.transform, v.options
    ('pipelining_off', {'num_stages': 1})
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argusdb.collectors.regions import ProgramSource


@dataclass(frozen=True)
class Variant:
    """The output of a transform, before it is bound to a parent version in the store.

    Attributes:
        source: the variant's kernel source (same file name as the parent's).
        transform: what was applied, e.g. ``'forced_wait:softmax/softmax_fwd/load'``; stored in
            ``program_version.transform``.
        options: compile-option overrides for the launch (``{'num_stages': 1}``); they enter the
            variant's program version with the parent's options.
        regions: the region IDs the transform targeted.
    """

    source: ProgramSource
    transform: str
    options: dict[str, Any] = field(default_factory=dict)
    regions: tuple[str, ...] = ()
