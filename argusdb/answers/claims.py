"""A claim: one signal's value for a region in one version, with its standing, its verdict
and what it rests on (runs, tasks, notes), as :func:`argusdb.answers.report.report` makes them
and the report's screen views (:mod:`argusdb.answers.summary`) and the dashboard show them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Claim:
    """One signal's value for a region in one version, with everything it rests on."""

    region_id: str
    program_version: str
    signal: str
    unit: str | None
    value: float
    evidence_class: str
    standing: str
    signature: str
    timing_clean: bool
    scope: str
    n: int
    median: float
    q1: float
    q3: float
    iqr: float
    cv: float
    ci_low: float | None
    ci_high: float | None
    runs: list[str]
    related_runs: list[str]
    tasks: list[str]
    association_entropy: float
    conditions: list[Any]
    notes: list[str]
    verdict: str
    reason: str
    #: Share (0..1) of the kernel's attributable total of this signal in ``_unattributed``
    #: (attributed claims; None otherwise or when the kernel has no attributed evidence).
    unattributed_share: float | None = None
    #: Gaps that make the claim insufficient (see :mod:`argusdb.answers.sufficiency`).
    gaps: list[dict[str, Any]] = field(default_factory=list)
    #: The repeats' 10th and 90th percentiles, smallest and largest value (the value itself
    #: for a single measurement).
    p10: float = math.nan
    p90: float = math.nan
    min_value: float = math.nan
    max_value: float = math.nan
    #: The collector that sampled the values (sample counts only, else empty): its cohort's
    #: :attr:`~argusdb.answers.select.CohortKey.sampler`.
    sampler: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in asdict(self).items()}
