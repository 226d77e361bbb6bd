"""AR03 replay.cross_pass: counters of different replay passes are not simultaneous."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule


class ReplayCrossPass(MixingRule):
    """Counters collected in different replay passes must not be combined as if together.

    Nsight Compute collects a long metric list over several replays of the kernel; each pass
    is a separate execution. A ratio of two counters from different passes mixes two
    executions. The rule refuses a join, aggregate or window that combines different signals
    from more than one ``replay_pass``, unless a key keeps the passes apart or the query
    acknowledges it with ``evidence_accepting('cross_pass')``.

    Anti-pattern::

        SELECT a.value / b.value FROM evidence a JOIN evidence b USING (run_id, kernel, launch)
        WHERE a.signal = 'inst_executed' AND b.signal = 'warp_stall_samples'

    Best practice::

        SELECT a.value / b.value FROM evidence_accepting('cross_pass') a
        JOIN evidence b USING (run_id, kernel, launch)
        WHERE a.signal = 'inst_executed' AND b.signal = 'warp_stall_samples'
    """

    code = "AR03"
    name = "replay.cross_pass"
    properties = (("pass", "passes", "replay_passes"),)
    acknowledged_by = "cross_pass"

    def explain(self, prop: str, c: Combination, values: list[int]) -> tuple[str, str]:
        return (f"{c.what()} combines counters from replay passes {values} as if collected "
                f"in one execution",
                "join or group by replay_pass, collect the counters in one pass (a smaller "
                "metric list: argus observe SOURCE_FILE --region REGION --signals <counters>), "
                "or say it is meant: FROM evidence_accepting('cross_pass')")
