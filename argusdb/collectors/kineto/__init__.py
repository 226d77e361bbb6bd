"""torch.profiler / Kineto Chrome traces (``.json``, ``.json.gz``).

Kernel launches with exact ns timings, the host op and API call that launched each, device
properties, and CUPTI range-profiler counters (``cuda_profiler_range``). A torch.profiler run:
``torch_profiler`` and ``activity_tracing`` are set; ``counter_replay`` when ranges are present.
"""

from __future__ import annotations

from argusdb.collectors.kineto.trace import KinetoTraceReader

READERS = [KinetoTraceReader()]
