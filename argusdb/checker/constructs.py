"""Evidence-aware constructs of the checked query language, as data.

Each construct is a table macro declared in ``queries/checked.sql``; this table tells the checker
what the macro returns and what its use in a query *says*: ``version_diff`` is the explicit way
to compare program versions region by region (the version rule accepts it), and
``evidence_accepting`` acknowledges a combination the checker would otherwise refuse. Uses are
recorded in ``explain()`` and in ``argus query --json`` under ``constructs``.

Example:
    >>> CONSTRUCTS["evidence_accepting"].acknowledgeable
    ('class_mix', 'cross_pass')
"""

from __future__ import annotations

from dataclasses import dataclass

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

#: Table functions that read nothing outside the query (allowed in FROM).
SAFE_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})  # = functions.SAFE_TABLES
