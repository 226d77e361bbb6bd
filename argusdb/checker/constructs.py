"""Evidence-aware constructs of the checked query language, as data.

Each construct is a table macro declared in ``argusdb/queries/checked.sql``; this table tells the
checker what the macro returns and what its use in a query *says*: ``version_diff`` is the explicit
way to compare program versions region by region (the version rule accepts it), and
``evidence_accepting`` acknowledges a combination the checker would otherwise refuse. Uses are
recorded in ``explain()`` and in ``argus query --json`` under ``constructs``.

Example:
    >>> CONSTRUCTS["evidence_accepting"].acknowledgeable
    ('class_mix', 'cross_pass')
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

#: What ``evidence_accepting`` can acknowledge, and the rule each one answers.
ACKNOWLEDGEABLE = {"class_mix": "AR04", "cross_pass": "AR03"}


@dataclass(frozen=True)
class Construct:
    """A table macro the checker understands.

    Attributes:
        name: macro name as written in queries.
        params: parameter names, in order; every argument must be a literal.
        columns: columns of the rows it returns (``None``: those of ``evidence`` plus extra).
        extra_columns: columns added to those of ``evidence``.
        diffs_versions: its rows compare two versions on purpose (AR01 accepts it).
        acknowledgeable: acknowledgements its argument may name.
        value_columns: columns that carry evidence values.
    """

    name: str
    params: tuple[str, ...]
    columns: tuple[str, ...] | None = None
    extra_columns: tuple[str, ...] = ()
    diffs_versions: bool = False
    acknowledgeable: tuple[str, ...] = ()
    value_columns: tuple[str, ...] = ("value",)


CONSTRUCTS: dict[str, Construct] = {
    "version_diff": Construct(
        name="version_diff",
        params=("diff_signal", "from_version", "to_version"),
        columns=("region_id", "signal", "unit", "evidence_class", "signature", "from_version",
                 "to_version", "from_median", "to_median", "delta", "ratio", "from_rows",
                 "to_rows"),
        diffs_versions=True,
        value_columns=("from_median", "to_median", "delta", "ratio"),
    ),
    "evidence_accepting": Construct(
        name="evidence_accepting",
        params=("acknowledged",),
        extra_columns=("accepted",),
        acknowledgeable=tuple(ACKNOWLEDGEABLE),
    ),
}


def resolve_version(text: str, versions: list[dict[str, Any]]) -> tuple[str | None, str]:
    """One program version for a selector, as ``argus diff --from`` reads it: the ID, a
    unique prefix of at least 4 characters, or ``KEY=VALUE[,KEY=VALUE]`` over the versions'
    ``--option`` values (``transform=T`` names a variant; otherwise originals win over the
    variants that share their options). Returns (version, '') or (None, why)."""
    t = text.strip()
    ids = [str(v["program_version"]) for v in versions]
    if t in ids:
        return t, ""
    if "=" in t:
        want = {k.strip(): val.strip() for k, val in
                (p.split("=", 1) for p in t.split(",") if "=" in p)}

        def matches(v: dict[str, Any]) -> bool:
            try:
                o = json.loads(v.get("options") or "{}")
            except ValueError:
                o = {}
            return all((v.get("transform") if k == "transform" else o.get(k)) == val
                       for k, val in want.items())

        hits = [v for v in versions if matches(v)]
        if len(hits) > 1 and "transform" not in want:
            hits = [v for v in hits if v.get("transform") is None] or hits
    elif len(t) >= 4:
        hits = [v for v in versions if str(v["program_version"]).startswith(t)]
    else:
        return None, (f"{t!r} is not a program version in the store (give an ID, a prefix of "
                      f"at least 4 characters, or KEY=VALUE of its options)")
    if len(hits) == 1:
        return str(hits[0]["program_version"]), ""
    listing = "; ".join(f"{v['program_version']} {v.get('options')}" for v in versions[:6])
    if not hits:
        close = difflib.get_close_matches(t, ids, n=2, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        return None, f"{t!r} is not a program version in the store{hint}; known: {listing}"
    return None, (f"{t!r} matches {len(hits)} program versions; name one by ID or add "
                  f"KEY=VALUE pairs (candidates: {listing})")
