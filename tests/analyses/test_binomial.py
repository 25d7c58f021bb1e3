"""Wilson and Clopper-Pearson intervals against statsmodels' proportion_confint (issue 25, 5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from rankci.analyses.binomial import (
    binomial_interval,
    clopper_pearson_interval,
    wilson_interval,
)

CASES = [(k, n) for n in (1, 2, 5, 10, 25, 37, 100, 1000) for k in sorted({0, 1, n // 3, n - 1, n})]


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
@pytest.mark.parametrize(
    ("ours", "theirs"), [(wilson_interval, "wilson"), (clopper_pearson_interval, "beta")]
)
def test_against_statsmodels(ours, theirs, alpha):
    k = np.array([c[0] for c in CASES])
    n = np.array([c[1] for c in CASES])
    lower, upper = ours(k, n, alpha)
    for i, (kk, nn) in enumerate(CASES):
        lo, hi = proportion_confint(int(kk), int(nn), alpha=alpha, method=theirs)
        assert lower[i] == pytest.approx(float(lo), abs=1e-10), (kk, nn)
        assert upper[i] == pytest.approx(float(hi), abs=1e-10), (kk, nn)


@pytest.mark.parametrize("n", [1, 10, 25, 100])
def test_boundaries_are_exact_and_never_zero_width(n):
    for interval in (wilson_interval, clopper_pearson_interval):
        lower, upper = interval(np.arange(n + 1), n)
        assert lower[0] == 0.0 and upper[-1] == 1.0
        assert np.all(upper - lower > 0)
        assert np.all((lower >= 0) & (upper <= 1))


def test_clopper_pearson_bounds_are_where_the_exact_tests_have_alpha_half():
    n, alpha = 30, 0.05
    k = np.arange(1, n)
    lower, upper = clopper_pearson_interval(k, n, alpha)
    # P(Bin(n, lower) >= k) = alpha/2 and P(Bin(n, upper) <= k) = alpha/2
    np.testing.assert_allclose(stats.binom.sf(k - 1, n, lower), alpha / 2, rtol=1e-9)
    np.testing.assert_allclose(stats.binom.cdf(k, n, upper), alpha / 2, rtol=1e-9)


def test_wilson_bounds_solve_the_score_equation():
    n, z = 40, stats.norm.ppf(0.975)
    k = np.arange(1, n)
    for bound in wilson_interval(k, n):
        np.testing.assert_allclose(np.abs(k / n - bound), z * np.sqrt(bound * (1 - bound) / n),
                                   rtol=1e-10)  # fmt: skip


def test_clopper_pearson_covers_at_least_the_level():
    # exact coverage: sum over k of the binomial pmf where the interval holds p
    n = 20
    lower, upper = clopper_pearson_interval(np.arange(n + 1), n)
    for p in np.linspace(0.001, 0.999, 97):
        pmf = stats.binom.pmf(np.arange(n + 1), n, p)
        assert pmf[(lower <= p) & (p <= upper)].sum() >= 0.95 - 1e-12


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="k"):
        wilson_interval(5, 4)
    with pytest.raises(ValueError, match="whole"):
        clopper_pearson_interval(1.5, 4)
    with pytest.raises(ValueError, match="n"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="alpha"):
        wilson_interval(1, 4, alpha=1.5)
    with pytest.raises(ValueError, match="method"):
        binomial_interval(1, 4, "wald")


def test_dispatch():
    assert binomial_interval(3, 9, "wilson") == wilson_interval(3, 9)
    assert binomial_interval(3, 9) == clopper_pearson_interval(3, 9)
