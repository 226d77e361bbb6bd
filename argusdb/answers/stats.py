"""Repeat statistics for region-keyed comparisons: medians, bootstrap CIs, Mann-Whitney U.

Every random draw uses a fixed seed (:data:`SEED`), so the same store gives the same intervals.
The statistic compared across versions is the *median* over repeated launches: robust to the
occasional slow launch (clock ramp, a context switch) that a mean would carry.

Example:
    >>> r = ratio_test([100.0, 101.0, 99.0] * 10, [80.0, 81.0, 79.0] * 10)
    >>> round(r.ratio, 2), r.p_value < 0.05
    (0.8, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

#: Seed of every bootstrap: answers are reproducible.
SEED = 20261129
#: Bootstrap resamples (percentile method). 4000 keeps the CI bounds stable to ~0.1 %.
N_RESAMPLES = 4000
#: Confidence level of every interval.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    """Repeat statistics of one sample of repeated measurements.

    Attributes:
        n: number of repeats.
        median: median value.
        q1: 25th percentile.
        q3: 75th percentile.
        cv: coefficient of variation (std / mean); 0 for a constant sample.
        ci_low: lower bound of the bootstrap CI of the median (NaN when n < 2).
        ci_high: upper bound of the bootstrap CI of the median (NaN when n < 2).
    """

    n: int
    median: float
    q1: float
    q3: float
    cv: float
    ci_low: float
    ci_high: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


@dataclass(frozen=True)
class RatioTest:
    """Comparison of two samples: ratio of medians (to / from) with CI and a rank test."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def resampled_medians(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``np.median(x[idx], axis=-1)``, bit for bit, without partitioning floats per row.

    Each row's median is an order statistic (or the mean of two) of the values it draws, so it
    is the value at a middle position of the row's *ranks* sorted; ranks are 16-bit integers,
    which NumPy sorts by radix (4–10× faster than partitioning 1,800 floats 4,000 times).
    """
    n = x.size
    if n > np.iinfo(np.int16).max or not np.isfinite(x).all():
        return np.asarray(np.median(x[idx], axis=-1))
    order = np.argsort(x, kind="stable")
    xs = x[order]
    rank = np.empty(n, dtype=np.int16)
    rank[order] = np.arange(n, dtype=np.int16)
    ranks = np.sort(rank[idx], axis=-1, kind="stable")
    mid = n // 2
    if n % 2:
        return np.asarray(xs[ranks[:, mid]])
    # as np.median: the mean of the two middle values
    return np.asarray(np.mean(np.stack([xs[ranks[:, mid - 1]], xs[ranks[:, mid]]], axis=-1),
                              axis=-1))


def percentile_ci(samples: Sequence[np.ndarray],
                  statistic: Callable[..., np.ndarray]) -> tuple[float, float]:
    """Percentile bootstrap CI of ``statistic`` of the samples' medians, exactly as
    ``scipy.stats.bootstrap(samples, ..., method='percentile', vectorized=True,
    rng=default_rng(SEED))`` computes it: the same index draws (sample by sample, all
    resamples at once), the same medians (:func:`resampled_medians`), the same quantiles."""
    rng = _rng()
    medians = [resampled_medians(s, rng.integers(0, s.size, (N_RESAMPLES, s.size)))
               for s in samples]
    theta = statistic(*medians)
    alpha = np.asarray((1 - CONFIDENCE) / 2, dtype=theta.dtype)
    ci = sps.quantile(theta, np.stack([alpha, 1 - alpha], axis=-1), axis=-1)
    return float(ci[0]), float(ci[1])


def summarize(values: Sequence[float]) -> Summary:
    """Median, IQR, CV and a bootstrap CI of the median of ``values``."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to summarize")
    med = float(np.median(x))
    q1, q3 = (float(v) for v in np.percentile(x, [25, 75]))
    mean = float(np.mean(x))
    cv = float(np.std(x, ddof=1) / mean) if x.size > 1 and mean != 0 else 0.0
    lo = hi = float("nan")
    if x.size >= 2:
        if np.all(x == x[0]):
            lo = hi = med
        else:
            lo, hi = percentile_ci([x], lambda m: m)
    return Summary(int(x.size), med, q1, q3, cv, lo, hi)


def ratio_test(before: Sequence[float], after: Sequence[float]) -> RatioTest:
    """Ratio of medians ``median(after) / median(before)``, its bootstrap CI, Mann-Whitney p.

    The two samples are resampled independently (unpaired: launches of two versions are not
    matched one to one). The rank test is two-sided; ties get the normal approximation with
    tie correction, as scipy chooses.
    """
    x = np.asarray(before, dtype=float)
    y = np.asarray(after, dtype=float)
    if x.size == 0 or y.size == 0:
        raise ValueError("both samples need at least one value")
    ratio = float(np.median(y) / np.median(x))
    if x.size < 2 or y.size < 2:
        return RatioTest(ratio, float("nan"), float("nan"), float("nan"))
    if np.all(x == x[0]) and np.all(y == y[0]):
        lo = hi = ratio
    else:
        lo, hi = percentile_ci([x, y], lambda mx, my: np.asarray(my / mx))
    if np.array_equal(np.sort(x), np.sort(y)):
        p = 1.0  # identical samples: scipy's normal approximation would still say ~1
    else:
        p = float(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    return RatioTest(ratio, lo, hi, p)


def run_spread(run_medians: Sequence[float]) -> float:
    """Run-to-run spread of one version: (max - min) / median of the per-run medians."""
    m = np.asarray(run_medians, dtype=float)
    if m.size < 2:
        return 0.0
    mid = float(np.median(m))
    return float((m.max() - m.min()) / mid) if mid else 0.0
