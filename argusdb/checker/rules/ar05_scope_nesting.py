"""AR05 scope.nesting: a slice of a kernel is not comparable with the whole kernel."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule


class ScopeNesting(MixingRule):
    """Values of different scopes (warp role, CTA, warp, SM, loop iteration vs whole kernel)
    must not be joined or aggregated together without an aggregation that makes them
    comparable.

    A per-warp-role duration is a slice; the kernel's duration is the whole. Dividing one by
    the other row by row, or summing both, double counts. The rule refuses a join, aggregate
    or window whose rows have different scope levels unless a key keeps them apart (a scope
    column in the join or GROUP BY). Aggregate the finer values first (a CTE that groups them
    up to the kernel), then join.

    Anti-pattern::

        SELECT w.value / k.value FROM evidence w JOIN evidence k USING (run_id, kernel, launch)
        WHERE w.warp_role = 'producer' AND k.warp_role = 'all' AND k.cta = 'all'

    Best practice::

        WITH roles AS (SELECT run_id, kernel, launch, sum(value) AS v FROM evidence
                       WHERE signal = 'busy_ns' GROUP BY run_id, kernel, launch)
        SELECT r.v / k.value FROM roles r JOIN evidence k USING (run_id, kernel, launch)
        WHERE k.signal = 'duration'
    """

    code = "AR05"
    name = "scope.nesting"
    properties = (("scope", "scopes", "scopes"),)

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        return (f"{c.what()} combines values of scopes that do not nest ({', '.join(values)})",
                "aggregate the finer-scoped values up to the coarser scope first (a CTE with "
                "GROUP BY over the other keys), or join/group by the scope columns (cta, sm, "
                "warp, warp_role, loop_iter)")
