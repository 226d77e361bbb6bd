"""Evidence-aware constructs of the checked query language, as data.

Each construct is a table macro declared in ``argusdb/queries/checked.sql`` or
``argusdb/queries/intervals/algebra.sql``; this table tells the checker what the macro returns
and what its use in a query *says*: ``version_diff`` is the explicit way to compare program
versions region by region (the version rule accepts it), and ``evidence_accepting``
acknowledges a combination the checker would otherwise refuse. Uses are recorded in
``explain()`` and in ``argus query --json`` under ``constructs``.

The interval algebra (``interval_union``, ``interval_merge``, ``interval_intersect``,
``interval_span_join``, ``interval_exposed``) is declared by its semantics: each selector
argument is one *input*, the rows of ``interval_event`` whose kind or role it names; the
inputs are combined on ``run_id`` inside the macro (so one run's intervals only meet each
other); the output carries the run's identity (``run_id``, ``program_version``, ``rank``,
``launch_group``, ``signature``, ``timing_clean``) through, and the query's predicates on those
columns narrow the inputs. The rules then judge what a query does with the rows: an aggregate,
window or join over them meets the version, interference and device rules like any evidence.

Example:
    >>> CONSTRUCTS["evidence_accepting"].acknowledgeable
    ('class_mix', 'cross_pass')
    >>> CONSTRUCTS["interval_span_join"].input_predicates(["collective", "compute"])
    ["(kind = 'collective' OR role = 'collective')", "(kind = 'compute' OR role = 'compute')"]
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from argusdb.schema.sqltext import literal

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
        base: the evidence relation its rows come from.
        selectors: values a selector argument may take (empty: arguments are not selectors).
        passthrough: output columns that are columns of every input row of ``base``
            (predicates on them narrow the inputs; empty: the ``evidence`` mapping).
        joined_on: columns the macro combines its inputs on (keys of that combination).
        input_filter: SQL over ``base`` every input row meets (rows the macro never reads).
        separates: properties its ``joined_on`` columns keep apart although they are no key
            column in general (a launch group: one program version under one recorder mode;
            its rows all have one, so the output's ``launch_group`` keys them too).
    """

    name: str
    params: tuple[str, ...]
    columns: tuple[str, ...] | None = None
    extra_columns: tuple[str, ...] = ()
    diffs_versions: bool = False
    acknowledgeable: tuple[str, ...] = ()
    value_columns: tuple[str, ...] = ("value",)
    base: str = "evidence"
    selectors: tuple[str, ...] = ()
    passthrough: tuple[str, ...] = ()
    joined_on: tuple[str, ...] = ()
    input_filter: str = ""
    separates: tuple[str, ...] = ()

    def input_predicates(self, args: list[str]) -> list[str]:
        """SQL predicates over ``base`` selecting each input, one per selector argument
        (an argument given twice is one input)."""
        if not self.selectors:
            return []
        out: list[str] = []
        for a in dict.fromkeys(args):
            q = literal(a)
            out.append(f"(kind = {q} OR role = {q})" + (f" AND {self.input_filter}"
                                                          if self.input_filter else ""))
        return out


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


#: What an interval selector may name: a kind or a role of ``interval_event``.
INTERVAL_SELECTORS = ("kernel", "collective", "host_op", "annotation", "step", "span", "scope",
                      "compute", "communication", "host")
#: Identity of the run every interval macro row comes from (columns of interval_event).
_IDENTITY = ("program_version", "launch_group", "rank", "signature", "timing_clean")
_UNION = ("run_id", "domain", "start_ns", "end_ns", "dur_ns", "n_intervals", *_IDENTITY)
_INTERSECT = ("run_id", "domain", "start_ns", "end_ns", "dur_ns", *_IDENTITY)
_SPAN_JOIN = ("run_id", "rank", "domain", "a_kind", "a_name", "a_ordinal", "a_step", "b_kind",
              "b_name", "b_ordinal", "b_step", "start_ns", "end_ns", "dur_ns",
              "program_version", "launch_group", "signature", "timing_clean")
_SPAN_JOIN_RANKS = ("launch_group", "domain", "a_run_id", "a_rank", "a_kind", "a_name",
                    "a_ordinal", "a_step", "b_run_id", "b_rank", "b_kind", "b_name", "b_ordinal",
                    "b_step", "start_ns", "end_ns", "dur_ns", "program_version", "signature",
                    "timing_clean")
_EXPOSED = ("run_id", "rank", "domain", "kind", "name", "track", "ordinal", "step", "start_ns",
            "end_ns", "dur_ns", "covered_ns", "exposed_ns", "program_version", "launch_group",
            "signature", "timing_clean")


def _interval(name: str, params: tuple[str, ...], columns: tuple[str, ...],
              values: tuple[str, ...] = ("dur_ns",)) -> Construct:
    return Construct(name, params, columns, value_columns=values, base="interval_event",
                     selectors=INTERVAL_SELECTORS, passthrough=("run_id", "domain", *_IDENTITY),
                     joined_on=("run_id", "domain"))


CONSTRUCTS.update({
    "interval_union": _interval("interval_union", ("sel",), _UNION),
    "interval_merge": _interval("interval_merge", ("sel_a", "sel_b"), _UNION),
    "interval_intersect": _interval("interval_intersect", ("sel_a", "sel_b"), _INTERSECT),
    # the A interval's own columns (a_name, kind, ordinal ...) are not pass-through: a
    # predicate on them narrows one input only, so the checker leaves it out (never hides rows)
    "interval_span_join": _interval("interval_span_join", ("sel_a", "sel_b"), _SPAN_JOIN),
    "interval_exposed": _interval("interval_exposed", ("sel_a", "sel_b"), _EXPOSED,
                                  ("dur_ns", "covered_ns", "exposed_ns")),
    # pairs intervals of two ranks of one launch group on the aligned clock: its inputs meet
    # on the launch group, which keeps versions and standings apart
    "interval_span_join_ranks": Construct(
        "interval_span_join_ranks", ("sel_a", "sel_b"), _SPAN_JOIN_RANKS,
        value_columns=("dur_ns",), base="interval_event", selectors=INTERVAL_SELECTORS,
        passthrough=("launch_group", "domain", "program_version", "signature", "timing_clean"),
        joined_on=("launch_group", "domain"),
        input_filter="launch_group IS NOT NULL AND domain = 'trace'",
        separates=("version", "standing")),
})


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
