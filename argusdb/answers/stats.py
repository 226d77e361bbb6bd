"""Repeat statistics for region-keyed comparisons: medians, bootstrap CIs, Mann-Whitney U.

The 95 % intervals are percentile-bootstrap intervals computed from the *exact* bootstrap
distribution of the median (no Monte Carlo): resampling ``n`` values with replacement, the
resample's median is an order statistic (or the mean of the two middle ones), whose
distribution is a sum of binomial terms (:func:`median_distribution`). The interval of one
median is read off that distribution; the interval of a ratio of two independent medians off
their exact joint distribution (:func:`ratio_quantile`). The same store gives the same
intervals, and they are what an infinite number of resamples would converge to
(``tests/answers/test_stats.py`` compares them with ``scipy.stats.bootstrap``). Where the
*from* sample's median can be zero or negative, the ratio's interval falls back to a
4,000-resample Monte Carlo bootstrap with a fixed seed (:data:`SEED`), as scipy draws it.
The statistic compared across versions is the *median* over repeated launches: robust to the
occasional slow launch (clock ramp, a context switch) that a mean would carry.

Example:
    >>> r = ratio_test([100.0, 101.0, 99.0] * 10, [80.0, 81.0, 79.0] * 10)
    >>> round(r.ratio, 2), r.p_value < 0.05
    (0.8, True)
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: Seed of every bootstrap: answers are reproducible.
SEED = 20261129
#: Monte Carlo bootstrap resamples (only where the exact distribution does not apply).
N_RESAMPLES = 4000
#: Confidence level of every interval.
CONFIDENCE = 0.95
#: Atoms of a median's bootstrap distribution below this probability are left out (their
#: total is below 1e-15 for any sample size an answer sees: no printed digit moves).
MIN_ATOM = 1e-22


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
    #: The medians the ratio is of (``np.median`` of each sample; NaN where not given).
    from_median: float = math.nan
    to_median: float = math.nan


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


def median_distribution(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact bootstrap distribution of ``np.median`` of ``values``: sorted atoms, probs.

    Resample ``n`` values with replacement; let ``u_1 < ... < u_K`` be the distinct values and
    ``p_k`` the share of values <= ``u_k``. The number of draws <= ``u_k`` is Binomial(n, p_k).
    For odd ``n`` the median is the ``m = (n + 1) / 2``-th draw in order, so
    ``P(median <= u_k) = P(Bin(n, p_k) >= m)`` (a regularized incomplete beta function). For
    even ``n`` (``m = n / 2``) it is the mean of the ``m``-th and ``m+1``-th draws: both equal
    ``u_i`` with probability ``P(Bin(n, p_i) >= m+1) - P(Bin(n, p_{i-1}) >= m) +
    C(n, m) p_{i-1}^m (1 - p_i)^(n-m)``; they are ``u_i < u_j`` with probability
    ``C(n, m) (p_i^m - p_{i-1}^m) ((1 - p_{j-1})^(n-m) - (1 - p_j)^(n-m))`` (exactly ``m``
    draws <= ``u_i``, one of them at ``u_i``, none strictly between, one or more at ``u_j``),
    computed in logarithms. Atoms below :data:`MIN_ATOM` are left out.
    """
    from argusdb.answers.special import ufuncs

    special = ufuncs()  # loaded at the first statistic, not with the command

    u, c = np.unique(np.asarray(values, dtype=float), return_counts=True)
    n = int(c.sum())
    cum = np.cumsum(c)
    p, p_prev = cum / n, (cum - c) / n
    if n % 2:
        m = (n + 1) // 2
        cdf = special.betainc(m, n - m + 1, p)
        cdf[-1] = 1.0
        return u, np.diff(cdf, prepend=0.0)
    m = n // 2
    log_c = float(special.gammaln(n + 1) - special.gammaln(m + 1) - special.gammaln(n - m + 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        lp, lp_prev, lq = np.log(p), np.log(p_prev), np.log1p(-p)
        above = special.betainc(m + 1, n - m, p)  # P(Bin(n, p_i) >= m + 1)
        above_prev = special.betainc(m, n - m + 1, p_prev)  # P(Bin(n, p_{i-1}) >= m)
        same = above - above_prev + np.exp(log_c + m * lp_prev + (n - m) * lq)
        # off the diagonal: rows i (where exactly m draws <= u_i is not negligible), columns j
        pmf = np.exp(log_c + m * lp + (n - m) * lq)
        rows = np.flatnonzero(pmf > MIN_ATOM)
        vals, probs = [u], [np.clip(same, 0.0, None)]
        if rows.size and u.size > 1:
            # row i reaches column j > i while (1 - p_{j-1})^(n-m) / (1 - p_i)^(n-m) is not
            # negligible: the columns of each row form a run, found by one searchsorted
            i = np.arange(rows[0], rows[-1] + 1)
            decay = -(n - m) * lq[:-1]  # increasing in j - 1; inf where p = 1
            stop = np.searchsorted(decay, decay[i] - np.log(MIN_ATOM) + 10.0, side="right") + 1
            stop = np.minimum(np.maximum(stop, i + 2), u.size)
            width = stop - i - 1
            r = np.repeat(i, width)
            k = r + 1 + (np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width,
                                                                 width))
            log_i = log_c + m * lp[r] + np.log(-np.expm1(m * (lp_prev[r] - lp[r])))
            log_j = (n - m) * lq[k - 1] + np.log(-np.expm1((n - m) * (lq[k] - lq[k - 1])))
            vals.append((u[r] + u[k]) / 2)  # as np.median averages the middle two
            probs.append(np.exp(log_i + log_j))
    v, pr = np.concatenate(vals), np.concatenate(probs)
    keep = pr > MIN_ATOM
    atoms, inverse = np.unique(v[keep], return_inverse=True)
    return atoms, np.bincount(inverse, weights=pr[keep])


def _quantile(atoms: np.ndarray, probs: np.ndarray, q: float) -> float:
    """The smallest atom whose cumulative probability reaches ``q`` (inverse CDF)."""
    cdf = np.cumsum(probs)
    return float(atoms[min(int(np.searchsorted(cdf, q * cdf[-1])), atoms.size - 1)])


#: Most atom pairs whose ratios :func:`ratio_quantile` lists to narrow its bisection.
NARROW_PAIRS = 4096


def ratio_quantile(x: tuple[np.ndarray, np.ndarray], y: tuple[np.ndarray, np.ndarray],
                   q: float, narrow: bool = True) -> float:
    """The ``q``-quantile of ``Y / X`` for independent discrete ``X`` > 0 and ``Y`` (atoms,
    probabilities), exactly: the smallest atom ``y / x`` with ``P(Y / X <= y / x) >= q``.

    ``P(Y / X <= r) = sum_x P(X = x) P(Y <= r x)``, non-decreasing in ``r``; bisection over
    the doubles between the smallest and the largest atom ends at adjacent doubles, and the
    answer is the largest atom not above the upper one. With ``narrow`` and at most
    :data:`NARROW_PAIRS` atom pairs, the bisection starts from the two adjacent ratios of
    atoms around the quantile, and from a few doubles below the upper one where that keeps
    the bracket (~15 evaluations of the sum instead of ~60); the bracket's invariant is
    checked, so the answer is the same double.
    """
    xa, xp = x
    ya, yp = y
    y_cdf = np.concatenate([[0.0], np.cumsum(yp)])
    target = q * float(xp.sum()) * y_cdf[-1]

    def below(r: float) -> float:
        return float(xp @ y_cdf[np.searchsorted(ya, r * xa, side="right")])

    ends = np.array([ya[0] / xa[0], ya[0] / xa[-1], ya[-1] / xa[0], ya[-1] / xa[-1]])
    lo, hi = _order_key(float(ends.min())), _order_key(float(ends.max()))
    if below(_from_key(lo)) >= target:
        return _from_key(lo)
    lo -= 1
    if narrow and xa.size * ya.size <= NARROW_PAIRS:
        lo, hi = _narrowed(lo, hi, below, target, np.unique(ya[None, :] / xa[:, None]))
    while hi - lo > 1:  # invariant: below(lo) < target <= below(hi); at most 64 steps
        mid = lo + (hi - lo) // 2
        if below(_from_key(mid)) >= target:
            hi = mid
        else:
            lo = mid
    r = _from_key(hi)
    idx = np.searchsorted(ya, r * xa, side="right")
    return float((ya[idx[idx > 0] - 1] / xa[idx > 0]).max())


def _narrowed(lo: int, hi: int, below: Callable[[float], float], target: float,
              ratios: np.ndarray) -> tuple[int, int]:
    """A bracket inside ``(lo, hi]`` (keys of doubles, ``below(lo) < target <= below(hi)``)
    that keeps that invariant: the first of the sorted ``ratios`` that reaches ``target``
    (found by bisection over them) and the one before it, then 8 doubles below the first."""
    a, b = 0, ratios.size  # the first index reaching target is in [a, b]
    while a < b:
        mid = (a + b) // 2
        if below(float(ratios[mid])) >= target:
            b = mid
        else:
            a = mid + 1
    if a < ratios.size and lo < _order_key(float(ratios[a])) <= hi:
        hi = _order_key(float(ratios[a]))
    if a > 0 and lo < _order_key(float(ratios[a - 1])) < hi:
        lo = _order_key(float(ratios[a - 1]))
    if lo < hi - 8 and below(_from_key(hi - 8)) < target:
        lo = hi - 8
    return lo, hi


def _order_key(f: float) -> int:
    """An integer that orders doubles as their values (adjacent doubles: adjacent keys)."""
    i = int.from_bytes(struct.pack("<d", f), "little", signed=True)
    return i if i >= 0 else -(i & 0x7FFFFFFFFFFFFFFF)


def _from_key(k: int) -> float:
    bits = k if k >= 0 else (-k) | -0x8000000000000000
    return float(struct.unpack("<d", bits.to_bytes(8, "little", signed=True))[0])


def percentile_ci(samples: Sequence[np.ndarray],
                  statistic: Callable[..., np.ndarray]) -> tuple[float, float]:
    """Monte Carlo percentile bootstrap CI of ``statistic`` of the samples' medians (used
    where the exact distribution does not apply, see :func:`ratio_ci`), exactly as
    ``scipy.stats.bootstrap(samples, ..., method='percentile', vectorized=True,
    rng=default_rng(SEED))`` computes it: the same index draws (sample by sample, all
    resamples at once), the same medians (:func:`resampled_medians`), the same quantiles."""
    from argusdb.answers.ranktest import linear_quantiles

    rng = _rng()
    medians = [resampled_medians(s, rng.integers(0, s.size, (N_RESAMPLES, s.size)))
               for s in samples]
    theta = statistic(*medians)
    alpha = np.asarray((1 - CONFIDENCE) / 2, dtype=theta.dtype)
    ci = linear_quantiles(theta, np.stack([alpha, 1 - alpha], axis=-1))
    return float(ci[0]), float(ci[1])


def ratio_ci(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """95 % percentile-bootstrap CI of ``median(y) / median(x)`` (independent resamples).

    Exact (:func:`median_distribution`, :func:`ratio_quantile`) when every value the median of
    ``x`` can take is positive and both samples are finite; otherwise the Monte Carlo bootstrap
    of :func:`percentile_ci`.
    """
    if np.isfinite(x).all() and np.isfinite(y).all():
        dx = median_distribution(x)
        if dx[0][0] > 0:
            dy = median_distribution(y)
            alpha = (1 - CONFIDENCE) / 2
            return ratio_quantile(dx, dy, alpha), ratio_quantile(dx, dy, 1 - alpha)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resampled median of 0: inf
        return percentile_ci([x, y], lambda mx, my: np.asarray(my / mx))


def summarize(values: Sequence[float]) -> Summary:
    """Median, IQR, CV and a bootstrap CI of the median of ``values``."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to summarize")
    if x.size == 1 and math.isfinite(v := float(x[0])) and v != 0:
        # one value (a counter read once): NumPy's median and percentiles of it are the value
        # itself, bit for bit, and a report summarises thousands such (~0.1 ms each saved)
        return Summary(1, v, v, v, 0.0, float("nan"), float("nan"))
    med = float(np.median(x))
    q1, q3 = (float(v) for v in np.percentile(x, [25, 75]))
    mean = float(np.mean(x))
    cv = float(np.std(x, ddof=1) / mean) if x.size > 1 and mean != 0 else 0.0
    lo = hi = float("nan")
    if x.size >= 2:
        if np.all(x == x[0]):
            lo = hi = med
        elif np.isfinite(x).all():
            alpha = (1 - CONFIDENCE) / 2
            atoms, probs = median_distribution(x)
            lo, hi = _quantile(atoms, probs, alpha), _quantile(atoms, probs, 1 - alpha)
        else:
            lo, hi = percentile_ci([x], lambda m: m)
    return Summary(int(x.size), med, q1, q3, cv, lo, hi)


def ratio_test(before: Sequence[float], after: Sequence[float]) -> RatioTest:
    """Ratio of medians ``median(after) / median(before)``, its bootstrap CI, Mann-Whitney p.

    A ``before`` median of 0 has no ratio: it is ``inf`` (``-inf``) when the ``after`` median is
    positive (negative), NaN when both are 0, with no CI; the rank test still runs.

    The two samples are resampled independently (unpaired: launches of two versions are not
    matched one to one). The rank test is two-sided; ties get the normal approximation with
    tie correction, as scipy chooses (:mod:`argusdb.answers.ranktest`: scipy's test without
    importing ``scipy.stats``).
    """
    from argusdb.answers.ranktest import mann_whitney_p

    x = np.asarray(before, dtype=float)
    y = np.asarray(after, dtype=float)
    if x.size == 0 or y.size == 0:
        raise ValueError("both samples need at least one value")
    mx, my = float(np.median(x)), float(np.median(y))
    if mx == 0:  # no ratio: +-inf from a zero median, undefined when both are 0
        ratio = math.copysign(math.inf, my) if my else float("nan")
    else:
        ratio = my / mx
    if x.size < 2 or y.size < 2:
        return RatioTest(ratio, float("nan"), float("nan"), float("nan"), mx, my)
    if not math.isfinite(ratio):
        lo = hi = float("nan")  # a CI of an unbounded ratio says nothing the medians do not
    elif np.all(x == x[0]) and np.all(y == y[0]):
        lo = hi = ratio
    else:
        lo, hi = ratio_ci(x, y)
    if np.array_equal(np.sort(x), np.sort(y)):
        p = 1.0  # identical samples: scipy's normal approximation would still say ~1
    else:
        p = mann_whitney_p(x, y)
    return RatioTest(ratio, lo, hi, p, mx, my)


def run_spread(run_medians: Sequence[float]) -> float:
    """Run-to-run spread of one version: (max - min) / median of the per-run medians."""
    m = np.asarray(run_medians, dtype=float)
    if m.size < 2:
        return 0.0
    mid = float(np.median(m))
    return float((m.max() - m.min()) / mid) if mid else 0.0
