"""AR02 interference.conflict: do not combine values whose runs' interference conflicts."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule
from argusdb.schema.signature import readable


class InterferenceConflict(MixingRule):
    """Values perturbed by a measurement must not be combined with clean ones (or others').

    Every value has a *standing*: ``clean``, or the interference signature of its run when the
    measurement perturbs it (a duration taken under counter replay, PC sampling or
    instrumentation; any value of an instrumented or forced-wait program). A join, aggregate
    or window that puts values of different standings from different runs together is
    refused unless a key keeps the runs apart (``run_id``, ``signature``, ``timing_clean``);
    inside one run, its counters next to its own perturbed timing are not a splice. Counters
    from a replayed run stay compatible with clean timing: replay re-executes, it does not
    change what executes.

    Anti-pattern::

        SELECT a.region_id, a.value / b.value FROM evidence a JOIN evidence b
          ON a.region_id = b.region_id AND a.launch = b.launch
        WHERE a.signal = 'duration' AND b.signal = 'duration'   -- ncu replay vs CUPTI trace

    Best practice::

        SELECT e.region_id, median(e.value) FROM evidence e JOIN run r USING (run_id)
        WHERE e.signal = 'duration' AND r.timing_clean GROUP BY e.region_id, e.program_version
    """

    code = "AR02"
    name = "interference.conflict"
    properties = (("standing", "standings", "standings"),)

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        perturbed = [s for s in values if s != "clean"]
        clean = "clean timing" if "clean" in values else "values"
        remedy = ("keep one standing: restrict to clean runs (JOIN run r USING (run_id) "
                  "WHERE r.timing_clean), or group/join by run_id or signature; to compare "
                  "timing, collect a clean timing run of the same version (argus observe "
                  "SOURCE_FILE --region REGION --signals duration, or ingest a CUPTI "
                  "activity trace)")
        if c.intervals:  # host-op tracing and forced waits change overlap itself
            remedy = ("keep one standing: restrict to timing-clean launches (WHERE "
                      "timing_clean; every interval macro returns it), or group/join by "
                      "run_id or signature; step time and overlap come from a clean launch "
                      "(argus observe ... -- torchrun: its dist_events launch), host ops "
                      "from the profiled one, each read on its own")
        return (f"{c.what()} combines {clean} with values perturbed by "
                f"{' and '.join(readable(p) for p in perturbed)}: these runs' interference "
                f"signatures conflict", remedy)
