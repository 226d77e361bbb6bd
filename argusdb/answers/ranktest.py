"""The two-sided Mann-Whitney U test and the linear sample quantile, without ``scipy.stats``.

``scipy.stats`` costs ~0.5 s CPU to import (hundreds of distributions and their docstrings)
where an answer needs one rank test and one quantile. These are the same computations, the
same floating-point operations in the same order, so the results are scipy's bit for bit
(``tests/answers/test_ranktest.py`` compares them with ``scipy.stats.mannwhitneyu`` and
``scipy.stats.quantile``): ``method='auto'`` (exact when a sample has at most 8 values and
nothing is tied, else the normal approximation with tie and continuity corrections), NaN
propagating. Only SciPy's special functions (already loaded for the bootstrap's binomial terms,
without the ``scipy.special`` package: :mod:`argusdb.answers.special`) are used.

Example:
    >>> round(mann_whitney_p([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]), 4)
    0.0286
    >>> [float(v) for v in linear_quantiles(np.array([4.0, 1.0, 3.0, 2.0]), [0.25, 0.5])]
    [1.75, 2.5]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Both samples larger than this, or any tie: the normal approximation (as scipy chooses).
EXACT_MAX = 8


def mann_whitney_p(before: Sequence[float] | np.ndarray,
                   after: Sequence[float] | np.ndarray) -> float:
    """Two-sided p-value of the Mann-Whitney U test of ``before`` against ``after``."""
    from argusdb.answers.special import ufuncs

    special = ufuncs()

    x = np.asarray(before, dtype=float)
    y = np.asarray(after, dtype=float)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0 or np.isnan(x).any() or np.isnan(y).any():
        return math.nan
    xy = np.concatenate([x, y])
    _, inverse, ties = np.unique(xy, return_inverse=True, return_counts=True)
    # average ranks: a value's ranks run from (values below it) + 1 to (values up to it)
    upto = np.cumsum(ties)
    rank_of = (upto - ties + 1 + upto) / 2
    ranks = rank_of[inverse]
    t = ties.astype(float)
    r1 = np.sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    u = np.maximum(u1, u2)
    if (n1 > EXACT_MAX and n2 > EXACT_MAX) or bool(np.any(t > 1)):
        mu = n1 * n2 / 2
        n = n1 + n2
        tie_term = np.sum(t**3 - t, axis=-1)
        s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (u - mu - 0.5) / s
        p = special.ndtr(-z)
    else:
        p = _exact_sf(int(np.asarray(u, np.int64)), n1, n2)
    return float(np.clip(p * 2, 0.0, 1.0))


def _exact_sf(k: int, n1: int, n2: int) -> float:
    """``P(U >= k)`` under the null hypothesis, for ``k >= n1 n2 / 2``: by symmetry the CDF
    at ``n1 n2 - k``, from the number of arrangements of each ``U`` (the recurrence
    ``u f(u) = sum_{i < u} f(i) sigma(u - i)``, where ``sigma(a)`` sums the divisors ``d`` of
    ``a`` with ``d <= n1`` less those with ``n2 < d <= n1 + n2``, for ``n1 <= n2``)."""
    from argusdb.answers.special import ufuncs

    special = ufuncs()

    n1, n2 = min(n1, n2), max(n1, n2)
    total = special.binom(n1 + n2, n1)
    kc = n1 * n2 - k
    sigma = np.zeros(kc + 1, dtype=int)
    for d in np.arange(1, n1 + 1):
        sigma[np.arange(d, kc + 1, d)] += d
    for d in np.arange(n2 + 1, n2 + n1 + 1):
        sigma[np.arange(d, kc + 1, d)] -= d
    sigma = sigma[1:]
    counts: np.ndarray = np.zeros(kc + 1, dtype=np.uint64)
    counts[0] = 1
    exact = True
    big = np.iinfo(np.uint64).max
    for u in np.arange(1, kc + 1):
        val = np.dot(counts[:u], sigma[u - 1::-1]) / u
        if val > big and exact:  # beyond uint64: floats from here on
            counts = counts.astype(float)
            exact = False
        counts[u] = val
    return float(np.cumsum(counts / total)[kc])


def linear_quantiles(values: np.ndarray, qs: Sequence[float] | np.ndarray) -> np.ndarray:
    """The ``qs`` quantiles of ``values`` by linear interpolation between order statistics
    (Hyndman and Fan's definition 7, NumPy's default); NaN when a value is NaN."""
    y = np.sort(values)
    p = np.asarray(qs, dtype=y.dtype)
    n = np.asarray(y.size, dtype=y.dtype)
    if y.size == 0 or np.isnan(y).any():
        return np.full(p.shape, np.nan)
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g[j < 0] = 0
    j = np.clip(j, 0.0, n - 1)
    jp1 = np.clip(jp1, 0.0, n - 1)
    return np.asarray((1 - g) * y[j.astype(np.int64)] + g * y[jp1.astype(np.int64)])
