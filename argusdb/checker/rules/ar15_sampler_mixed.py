"""AR15 evidence.sampler: sample counts of two samplers are not summed together."""

from __future__ import annotations

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding

#: How each collector's sampler is named in messages.
SAMPLERS = {"ncu": "Nsight Compute's warp-state samples", "proton": "Proton's PC samples"}


class SamplerMixed(Rule):
    """An aggregate or window must not put together sample counts (unit ``samples``) that two
    collectors' samplers counted, unless a key keeps the collectors apart.

    Nsight Compute's source page and Proton's PC sampling both give stall reasons as sample
    counts, several under one name (``stall_barrier``, ``stall_wait``, ``stall_selected``):
    each counts at its own interval in its own runs, so a sum or a median over both describes
    neither (on the H200 the layer norm's ``stall_barrier`` is 90 samples by one and 2,547 by
    the other). Keys that separate them: ``collector``, ``kind``, ``signature`` or ``run_id``
    (join ``run`` for the first two); or a filter on one collector.

    Anti-pattern::

        SELECT region_id, sum(value) FROM evidence
        WHERE signal = 'stall_barrier' AND evidence_class = 'attributed'
        GROUP BY region_id          -- ncu's and Proton's samples in one sum

    Best practice::

        SELECT e.region_id, r.collector, sum(e.value) AS samples
        FROM evidence e JOIN run r USING (run_id)
        WHERE e.signal = 'stall_barrier' AND e.evidence_class = 'attributed'
        GROUP BY e.region_id, r.collector
    """

    code = "AR15"
    name = "evidence.sampler"
    phase = "compat"

    def check(self, ctx: Context) -> list[Finding]:
        out = []
        for c in ctx.mixing("sampler"):
            if c.kind == "join":
                continue  # two samplers' counts side by side, in columns of their own
            ss = sorted(c.props.samplers)
            named = " and ".join(SAMPLERS.get(s, f"the {s} collector's sampler") for s in ss)
            out.append(self.finding(
                ctx, c.node,
                f"{c.what()} puts together sample counts of {len(ss)} samplers, {named}: "
                f"each counts at its own interval in its own runs",
                "keep one sampler: JOIN run r USING (run_id) and filter WHERE r.collector = "
                f"'{ss[0]}', or group by r.collector (or run_id, signature)",
                samplers=ss))
        return out
