"""The bootstrap of argusdb.answers.stats gives scipy's intervals bit for bit, faster."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from argusdb.answers import stats


def scipy_ratio_ci(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """What ratio_test computed before: scipy's percentile bootstrap, same seed."""
    def ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.median(b, axis=axis) / np.median(a, axis=axis))

    res = sps.bootstrap((x, y), ratio, n_resamples=stats.N_RESAMPLES, method="percentile",
                        confidence_level=stats.CONFIDENCE, vectorized=True, axis=-1,
                        rng=np.random.default_rng(stats.SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def scipy_median_ci(x: np.ndarray) -> tuple[float, float]:
    res = sps.bootstrap((x,), np.median, n_resamples=stats.N_RESAMPLES, method="percentile",
                        confidence_level=stats.CONFIDENCE, vectorized=True, axis=-1,
                        rng=np.random.default_rng(stats.SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def sample(n: int, seed: int, ties: bool) -> np.ndarray:
    x = np.random.default_rng(seed).normal(200_000, 800, n)
    return np.round(x / 500) * 500 if ties else x  # launch times repeat at coarse clocks


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 400), st.integers(2, 400), st.integers(0, 2**32 - 1), st.booleans())
def test_ratio_interval_is_scipys(nx: int, ny: int, seed: int, ties: bool) -> None:
    x, y = sample(nx, seed, ties), sample(ny, seed + 1, ties) * 0.93
    t = stats.ratio_test(x.tolist(), y.tolist())
    assert (t.ci_low, t.ci_high) == scipy_ratio_ci(x, y)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 400), st.integers(0, 2**32 - 1), st.booleans())
def test_median_interval_is_scipys(n: int, seed: int, ties: bool) -> None:
    x = sample(n, seed, ties)
    s = stats.summarize(x.tolist())
    assert (s.ci_low, s.ci_high) == scipy_median_ci(x)


def test_recorded_sizes_are_scipys() -> None:
    # the diff of the README's big store: 1,800 launches against 60
    x, y = sample(1800, 7, False), sample(60, 8, False) * 0.93
    t = stats.ratio_test(x.tolist(), y.tolist())
    assert (t.ci_low, t.ci_high) == scipy_ratio_ci(x, y)


def test_resampled_medians_match_numpy() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 10, 11, 1800):
        x = np.round(rng.normal(0, 5, n))
        idx = rng.integers(0, n, (50, n))
        assert np.array_equal(stats.resampled_medians(x, idx), np.median(x[idx], axis=-1))
    x = np.array([1.0, np.nan, 3.0])  # not finite: numpy's own median (NaN propagates)
    idx = np.array([[0, 1, 2], [0, 2, 2]])
    out = stats.resampled_medians(x, idx)
    assert np.isnan(out[0]) and out[1] == 3.0
