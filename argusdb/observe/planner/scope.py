"""Scopes of a request: which dynamic instances a measurement covers.

Coordinates are those of every evidence row (``launch, cta, sm, warp, warp_role, loop_iter``).
A value is ``all`` (aggregate over every instance, the default), ``each`` (one value per
instance), an index (``3``) or an inclusive range (``0-7``); ``warp_role`` also takes a role name.
Coordinates other than ``launch`` are *intra-kernel*: only instrumentation inside the kernel
(Proton scopes) sees them.

Example:
    >>> parse_scope({"warp": "each"})["warp"], parse_scope({})["launch"]
    ('each', 'all')
"""

from __future__ import annotations

import difflib
import re

from argusdb.errors import PlanError
from argusdb.schema.shape import INTRA_KERNEL_SCOPE as INTRA_KERNEL
from argusdb.schema.shape import SCOPE as SCOPE_COLUMNS

_VALUE = re.compile(r"^(all|each|\d+|\d+-\d+)$")


def parse_scope(scope: dict[str, str] | None) -> dict[str, str]:
    """Complete and check a scope; every coordinate not given is ``all``.

    Raises:
        PlanError: unknown coordinate or malformed value.
    """
    out = dict.fromkeys(SCOPE_COLUMNS, "all")
    for key, raw in (scope or {}).items():
        k, v = key.strip(), str(raw).strip()
        if k not in out:
            close = difflib.get_close_matches(k, SCOPE_COLUMNS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise PlanError(f"unknown scope coordinate {k!r}.{hint} Coordinates: "
                            f"{', '.join(SCOPE_COLUMNS)}.")
        if not _VALUE.match(v) and not (k == "warp_role" and re.match(r"^\w+$", v)):
            raise PlanError(f"scope {k}={v!r}: a value is 'all', 'each', an index (3) or a "
                            f"range (0-7)")
        out[k] = v
    return out


def intra_kernel(scope: dict[str, str]) -> list[str]:
    """Intra-kernel coordinates the scope resolves (not ``all``)."""
    return [k for k in INTRA_KERNEL if scope[k] != "all"]


def parse_pairs(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` strings (CLI ``--scope``) → dict."""
    out: dict[str, str] = {}
    for p in pairs:
        if "=" not in p:
            raise PlanError(f"--scope {p!r}: expected KEY=VALUE, e.g. --scope warp=each")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out
