"""The interval-algebra table macros (``argusdb/queries/intervals/algebra.sql``) as checker
constructs.

The checker refuses table functions it does not know (AR09). These entries say what each macro
returns, for the checker to merge into ``argusdb.checker.constructs.CONSTRUCTS`` (its owner's
call: one line, ``CONSTRUCTS.update(INTERVAL_CONSTRUCTS)``). Arguments are selector literals;
rows stay per run, so the interference and version rules apply to what a query joins them with.
"""

from __future__ import annotations

from argusdb.checker.constructs import Construct

_UNION = ("run_id", "domain", "start_ns", "end_ns", "dur_ns", "n_intervals")
_INTERSECT = ("run_id", "domain", "start_ns", "end_ns", "dur_ns")
_SPAN_JOIN = ("run_id", "rank", "domain", "a_kind", "a_name", "a_ordinal", "a_step", "b_kind",
              "b_name", "b_ordinal", "b_step", "start_ns", "end_ns", "dur_ns")
_EXPOSED = ("run_id", "rank", "domain", "kind", "name", "track", "ordinal", "step", "start_ns",
            "end_ns", "dur_ns", "covered_ns", "exposed_ns")

INTERVAL_CONSTRUCTS: dict[str, Construct] = {
    "interval_union": Construct("interval_union", ("sel",), _UNION, value_columns=("dur_ns",)),
    "interval_merge": Construct("interval_merge", ("sel_a", "sel_b"), _UNION,
                                value_columns=("dur_ns",)),
    "interval_intersect": Construct("interval_intersect", ("sel_a", "sel_b"), _INTERSECT,
                                    value_columns=("dur_ns",)),
    "interval_span_join": Construct("interval_span_join", ("sel_a", "sel_b"), _SPAN_JOIN,
                                    value_columns=("dur_ns",)),
    "interval_exposed": Construct("interval_exposed", ("sel_a", "sel_b"), _EXPOSED,
                                  value_columns=("dur_ns", "covered_ns", "exposed_ns")),
}
