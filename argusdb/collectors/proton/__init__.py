"""Proton (``triton.profiler``) outputs.

Hatchet scope trees (kernel time per scope), PC-sampling trees (stall reasons per kernel and
line), intra-kernel instrumentation trees and traces (cycles per scope, per CTA and warp), and
kernel timelines as Chrome traces. The interference of each run follows the mode: activity
tracing, ``pc_sampling`` or ``instrumentation``.
"""

from __future__ import annotations

from argusdb.collectors.proton.hatchet import HatchetReader
from argusdb.collectors.proton.trace import ProtonInstrTraceReader, ProtonTraceReader

READERS = [HatchetReader(), ProtonInstrTraceReader(), ProtonTraceReader()]
