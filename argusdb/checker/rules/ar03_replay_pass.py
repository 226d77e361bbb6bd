"""AR03 replay.cross_pass: counters of different replay passes are not simultaneous."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class ReplayCrossPass(Rule):
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
    phase = "compat"

    def check(self, ctx: Context) -> list[Finding]:
        out = []
        for c in ctx.mixing("pass"):
            if "cross_pass" in c.acks:
                continue
            passes = sorted(c.props.passes)
            out.append(self.finding(
                ctx, c.node,
                f"{c.what()} combines counters from replay passes {passes} as if collected in "
                f"one execution",
                "join or group by replay_pass, collect the counters in one pass (a smaller "
                "metric list: argus observe REGION --signals <counters>), or say it is meant: "
                "FROM evidence_accepting('cross_pass')",
                replay_passes=passes))
        return out
