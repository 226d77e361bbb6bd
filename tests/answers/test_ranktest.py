"""argusdb.answers.ranktest is scipy.stats's Mann-Whitney U test and linear quantile, bit for
bit: exact and asymptotic p-values, ties, one small and one large sample, infinities, NaN."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from argusdb.answers import ranktest


def scipy_p(x: np.ndarray, y: np.ndarray) -> float:
    return float(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == b


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.sampled_from([0.0, 1.0, 50.0, 400.0]))
def test_p_values_are_scipys(n1: int, n2: int, seed: int, step: float) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.normal(1000, 30, n1), rng.normal(1010, 30, n2)
    if step:  # coarse clocks: tied values
        x, y = np.round(x / step) * step, np.round(y / step) * step
    assert same(ranktest.mann_whitney_p(x, y), scipy_p(x, y))


@pytest.mark.parametrize(("x", "y"), [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]),  # exact, separated
    ([5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0], [6.0, 10.0, 0.5, 11.0]),  # exact, interleaved
    ([3.0, 1.0], list(np.arange(10.0, 300.0))),  # exact: one sample of 2, one of 290
    ([1.0, 1.0], [1.0, 1.0, 1.0]),  # every value tied: z is -inf
    ([1.0, np.inf, 3.0], [2.0, 4.0, -np.inf, 9.0]),  # infinities are ranked
    ([1.0, np.nan, 3.0], [2.0, 4.0, 5.0]),  # NaN propagates
    ([7.0], [1.0, 2.0]),
])
def test_edge_cases_are_scipys(x: list[float], y: list[float]) -> None:
    a, b = np.array(x), np.array(y)
    assert same(ranktest.mann_whitney_p(a, b), scipy_p(a, b))
    assert same(ranktest.mann_whitney_p(b, a), scipy_p(b, a))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 500), st.integers(0, 2**32 - 1), st.booleans())
def test_quantiles_are_scipys(n: int, seed: int, special: bool) -> None:
    rng = np.random.default_rng(seed)
    theta = rng.normal(1.0, 0.05, n)
    if special:  # ratios of resampled medians of 0: infinities, and NaN for 0 / 0
        theta[rng.integers(0, n, max(1, n // 10))] = rng.choice([np.inf, -np.inf, np.nan])
    alpha = np.asarray(0.025, dtype=theta.dtype)
    qs = np.stack([alpha, 1 - alpha], axis=-1)
    got, want = ranktest.linear_quantiles(theta, qs), sps.quantile(theta, qs, axis=-1)
    assert all(same(float(a), float(b)) for a, b in zip(got, want, strict=True))
