"""The bootstrap intervals of argusdb.answers.stats.

Answers read their 95 % intervals off the exact bootstrap distribution of the median
(binomial terms, no Monte Carlo). Checked here: that distribution against brute-force
enumeration of every resample of small samples; the ratio's percentiles against an enumeration
of every pair of resamples; and the intervals against ``scipy.stats.bootstrap`` with many
resamples, to the precision the answers print (4 decimals of a ratio, 4 significant digits
of a median). The Monte Carlo fallback (a *from* median that can be zero or negative) is
scipy's percentile bootstrap bit for bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from argusdb.answers import stats

ALPHA = (1 - stats.CONFIDENCE) / 2


def scipy_ratio_ci(x: np.ndarray, y: np.ndarray, n_resamples: int = stats.N_RESAMPLES,
                   seed: int = stats.SEED) -> tuple[float, float]:
    """scipy's percentile bootstrap of median(y) / median(x)."""
    def ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.median(b, axis=axis) / np.median(a, axis=axis))

    res = sps.bootstrap((x, y), ratio, n_resamples=n_resamples, method="percentile",
                        confidence_level=stats.CONFIDENCE, vectorized=True, axis=-1,
                        rng=np.random.default_rng(seed),
                        batch=None if n_resamples == stats.N_RESAMPLES else 5000)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def scipy_median_ci(x: np.ndarray, n_resamples: int = stats.N_RESAMPLES,
                    seed: int = stats.SEED) -> tuple[float, float]:
    res = sps.bootstrap((x,), np.median, n_resamples=n_resamples, method="percentile",
                        confidence_level=stats.CONFIDENCE, vectorized=True, axis=-1,
                        rng=np.random.default_rng(seed),
                        batch=None if n_resamples == stats.N_RESAMPLES else 5000)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def sample(n: int, seed: int, ties: bool) -> np.ndarray:
    x = np.random.default_rng(seed).normal(200_000, 800, n)
    return np.round(x / 500) * 500 if ties else x  # launch times repeat at coarse clocks


def enumerated(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap distribution of np.median(x) by enumerating all n^n resamples."""
    n = x.size
    meds = np.median(x[np.array(list(itertools.product(range(n), repeat=n)))], axis=-1)
    atoms, counts = np.unique(meds, return_counts=True)
    return atoms, counts / meds.size


@pytest.mark.parametrize("x", [[5.0, 1.0], [3.0, 1.0, 2.0], [1.0, 2.0, 3.0, 4.0],
                               [1.0, 1.0, 2.0, 7.0], [4.0, 4.0, 4.0, 1.0, 9.0],
                               [2.0, 3.0, 3.0, 5.0, 8.0, 8.0], [0.0, -1.0, 6.0, 2.5, 2.5, 7.0]])
def test_median_distribution_is_the_enumeration(x: list[float]) -> None:
    atoms, probs = stats.median_distribution(x)
    want_atoms, want_probs = enumerated(np.array(x))
    assert np.array_equal(atoms, want_atoms)
    assert probs == pytest.approx(want_probs, abs=1e-12)


def test_ratio_quantiles_are_the_enumeration() -> None:
    rng = np.random.default_rng(11)
    for _ in range(6):
        x, y = rng.integers(90, 110, 4).astype(float), rng.integers(80, 100, 5).astype(float)
        mx = np.median(x[np.array(list(itertools.product(range(4), repeat=4)))], axis=-1)
        my = np.median(y[np.array(list(itertools.product(range(5), repeat=5)))], axis=-1)
        theta = np.sort((my[None, :] / mx[:, None]).ravel())  # every pair, equally likely
        cdf = np.arange(1, theta.size + 1) / theta.size
        dx, dy = stats.median_distribution(x), stats.median_distribution(y)
        for q in (ALPHA, 0.5, 1 - ALPHA):
            want = theta[np.searchsorted(cdf, q - 1e-12)]  # smallest value with F >= q
            assert stats.ratio_quantile(dx, dy, q) == pytest.approx(want, rel=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 300), st.integers(2, 300), st.integers(0, 2**32 - 1),
       st.integers(0, 3), st.sampled_from([ALPHA, 0.5, 1 - ALPHA, 1e-9, 1 - 1e-12]))
def test_narrowed_ratio_quantile_is_the_whole_bisections(nx: int, ny: int, seed: int,
                                                         digits: int, q: float) -> None:
    # the bisection started from the atoms' ratios around the quantile ends at the same
    # double as the bisection over every double between the smallest and largest ratio
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0.5, 2.0, nx), digits)  # few atoms: narrowed
    y = np.round(rng.uniform(0.5, 2.0, ny), digits)
    dx, dy = stats.median_distribution(x), stats.median_distribution(y)
    assert stats.ratio_quantile(dx, dy, q) == stats.ratio_quantile(dx, dy, q, narrow=False)


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 300), st.integers(2, 300), st.integers(0, 2**32 - 1), st.booleans())
@example(nx=211, ny=113, seed=2367, ties=True)  # an atom of mass 0.94 whose F is 0.9758
def test_ratio_interval_is_scipys_to_printed_precision(nx: int, ny: int, seed: int,
                                                       ties: bool) -> None:
    # a diff prints a ratio's bounds with 4 decimals; 100,000 resamples put scipy's Monte
    # Carlo percentiles within ~3e-5 of the exact ones here
    x, y = sample(nx, seed, ties), sample(ny, seed + 1, ties) * 0.93
    t = stats.ratio_test(x.tolist(), y.tolist())
    lo, hi = scipy_ratio_ci(x, y, 100_000)
    dx, dy = stats.median_distribution(x), stats.median_distribution(y)
    for exact, mc, q in ((t.ci_low, lo, ALPHA), (t.ci_high, hi, 1 - ALPHA)):
        # Equal at the printed digits, or (ties: atoms further apart than that) the exact
        # distribution puts the boundary between the two atoms at q within Monte Carlo error.
        assert (abs(exact - mc) <= 1e-4
                or abs(ratio_cdf(dx, dy, min(exact, mc)) - q) <= 0.003), (exact, mc, q)


def ratio_cdf(dx: tuple[np.ndarray, np.ndarray], dy: tuple[np.ndarray, np.ndarray],
              v: float) -> float:
    """P(median(y*) / median(x*) <= v) from the exact distributions (positive x)."""
    (ax, px), (ay, py) = dx, dy
    idx = np.searchsorted(ay, v * ax * (1 + 1e-12), side="right")
    below = np.concatenate([[0.0], np.cumsum(py)])[idx]
    return float(np.sum(px * below))


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 300), st.integers(0, 2**32 - 1), st.booleans())
@example(n=191, seed=4897, ties=True)  # scipy lands on the neighbouring atom
def test_median_interval_is_scipys_to_printed_precision(n: int, seed: int, ties: bool) -> None:
    x = sample(n, seed, ties)
    s = stats.summarize(x.tolist())
    lo, hi = scipy_median_ci(x, 100_000)
    atoms, probs = stats.median_distribution(x)
    for exact, mc, level in ((s.ci_low, lo, ALPHA), (s.ci_high, hi, 1 - ALPHA)):
        if exact != pytest.approx(mc, rel=1e-4):
            # with ties the median has atoms: where the exact CDF passes the level within
            # Monte Carlo error of 100,000 resamples, scipy may land on the neighbouring atom
            cdf = float(probs[atoms <= min(exact, mc)].sum())
            assert abs(cdf - level) < 5 * np.sqrt(level * (1 - level) / 100_000), (exact, mc)


def test_recorded_sizes_are_scipys_to_printed_precision() -> None:
    # the diff of the README's big store: 1,800 launches against 1,800, and against 60
    for ny in (1800, 60):
        x, y = sample(1800, 7, False), sample(ny, 8, False) * 0.93
        t = stats.ratio_test(x.tolist(), y.tolist())
        lo, hi = scipy_ratio_ci(x, y, 100_000)
        assert abs(t.ci_low - lo) <= 1e-4 and abs(t.ci_high - hi) <= 1e-4


def test_fallback_for_a_median_that_can_be_zero_is_scipys() -> None:
    x = np.array([0.0, 0.0, 0.0, 5.0, 7.0, 9.0, 4.0])  # the from median can be 0
    y = np.array([3.0, 4.0, 6.0, 2.0, 8.0])
    t = stats.ratio_test(x.tolist(), y.tolist())
    assert (t.ci_low, t.ci_high) == scipy_ratio_ci(x, y)


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 400), st.integers(2, 400), st.integers(0, 2**32 - 1), st.booleans())
def test_monte_carlo_interval_is_scipys(nx: int, ny: int, seed: int, ties: bool) -> None:
    x, y = sample(nx, seed, ties), sample(ny, seed + 1, ties) * 0.93
    got = stats.percentile_ci([x, y], lambda mx, my: np.asarray(my / mx))
    assert got == scipy_ratio_ci(x, y)


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


def test_a_zero_from_median_has_no_ratio_and_no_numpy_warning() -> None:
    """A signal at 0 in the *from* version (no stall samples, no bank conflicts) has no ratio:
    inf when the *to* median is positive, NaN when both are 0, no CI; the rank test still runs,
    and NumPy warns about nothing (warnings are errors here)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        up = stats.ratio_test([0.0] * 6, [3.0, 4.0, 5.0, 4.0, 3.0, 5.0])
        flat = stats.ratio_test([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 2.0])
        down = stats.ratio_test([0.0] * 5, [-1.0] * 5)
        # a from median that is positive but resamples that reach 0: Monte Carlo fallback
        fallback = stats.ratio_test([0.0, 0.0, 1.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0, 6.0])
    assert up.ratio == np.inf and np.isnan(up.ci_low) and np.isnan(up.ci_high)
    assert 0 < up.p_value < 0.05
    assert np.isnan(flat.ratio) and np.isnan(flat.ci_low) and flat.p_value > 0.05
    assert down.ratio == -np.inf
    assert fallback.ratio == 4.0 and fallback.ci_high == np.inf and fallback.ci_low > 0


def test_diff_verdict_of_a_zero_from_median() -> None:
    """The diff's verdict says why there is no ratio, and a real change is still found."""
    from argusdb.answers.diff import _verdict

    up = stats.ratio_test([0.0] * 6, [3.0, 4.0, 5.0, 4.0, 3.0, 5.0])
    same = stats.ratio_test([0.0] * 6, [0.0] * 6)
    significant, verdict = _verdict(up, 0.02, 0.05)
    assert significant and "the from median is 0: no ratio" in verdict
    assert verdict.startswith("higher by 4 ")
    significant, verdict = _verdict(same, 0.02, 0.05)
    assert not significant and "both medians are 0" in verdict


def test_one_value_is_summarised_as_numpy_summarises_it() -> None:
    """A single value takes a short path; it is what the general one gives, bit for bit."""
    import math
    import struct

    rng = np.random.default_rng(11)
    vals = [*rng.normal(0, 1e6, 200), *rng.normal(0, 1e-9, 50), 5e-324, -1.7e308, 3.0]
    for v in (*vals, 0.0, -0.0, np.inf, -np.inf, np.nan):
        got = stats.summarize([float(v)])
        x = np.array([float(v), float(v)])[:1]  # same value, the general path
        med = float(np.median(x))
        q1, q3 = (float(q) for q in np.percentile(x, [25, 75]))
        bits = [struct.pack("<d", f) for f in (got.median, got.q1, got.q3)]
        assert bits == [struct.pack("<d", f) for f in (med, q1, q3)], v
        assert got.n == 1 and got.cv == 0.0 and math.isnan(got.ci_low) and math.isnan(got.ci_high)
