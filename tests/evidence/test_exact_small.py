"""Exact small-sample paired tests (issue 25, item 3): McNemar and the sign-flip test.

References: statsmodels' ``mcnemar(table, exact=True)`` (two-sided, converted), scipy's
``binomtest(alternative="greater")``, and direct loops over pairs and sign vectors.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

import rankci
from rankci.evidence.exact_small import (
    mcnemar_counts,
    mcnemar_pvalue,
    mcnemar_tests,
    sign_vectors,
    signflip_pvalue,
    signflip_tests,
)


def _binary(rng, n, m, rho=0.3, theta=None):
    theta = np.linspace(0.7, 0.4, m) if theta is None else np.asarray(theta)
    z = np.sqrt(rho) * rng.standard_normal((n, 1)) + np.sqrt(1 - rho) * rng.standard_normal((n, m))
    return (stats.norm.cdf(z) < theta).astype(float)


def _one_sided_from_statsmodels(b: int, c: int) -> float:
    """P(Bin(b + c, 1/2) >= b) from statsmodels' two-sided exact p = min(1, 2 P(Bin <= min))."""
    two_sided = mcnemar([[5, b], [c, 5]], exact=True).pvalue
    if b > c:  # the two-sided p is 2 P(Bin <= c) = 2 P(Bin >= b) < 1
        return two_sided / 2.0
    if b < c:  # 2 P(Bin <= b): P(Bin >= b) = 1 - P(Bin <= b) + P(Bin = b)
        return 1.0 - two_sided / 2.0 + stats.binom.pmf(b, b + c, 0.5)
    return np.nan  # b == c: statsmodels caps at 1, the one-sided p is not recoverable


@pytest.mark.parametrize("b", range(0, 13))
@pytest.mark.parametrize("c", [0, 1, 2, 5, 9, 20])
def test_mcnemar_against_statsmodels_and_binomtest(b, c):
    ours = float(mcnemar_pvalue(b, c))
    if b + c > 0:
        exact = stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue
        assert ours == pytest.approx(exact, rel=1e-10, abs=1e-14)
    converted = _one_sided_from_statsmodels(b, c)
    if np.isfinite(converted):
        assert ours == pytest.approx(converted, rel=1e-10, abs=1e-14)
    else:  # tie: the two one-sided p-values share the middle atom
        assert ours + float(mcnemar_pvalue(c, b)) == pytest.approx(
            1 + stats.binom.pmf(b, b + c, 0.5) if b + c else 2.0
        )


def test_mcnemar_tests_all_pairs_against_a_loop_with_missing_cells():
    rng = np.random.default_rng(3)
    x = _binary(rng, 40, 5)
    x[rng.random(x.shape) < 0.1] = np.nan
    p = mcnemar_tests(x)
    wins, n = mcnemar_counts(x)
    for j, l in product(range(5), repeat=2):
        if j == l:
            assert np.isnan(p[j, l])
            continue
        both = np.isfinite(x[:, j]) & np.isfinite(x[:, l])
        b = int(((x[both, j] == 1) & (x[both, l] == 0)).sum())
        c = int(((x[both, j] == 0) & (x[both, l] == 1)).sum())
        assert wins[j, l] == b and n[j, l] == both.sum()
        two_sided = mcnemar([[0, b], [c, 0]], exact=True).pvalue
        if b > c:
            assert p[j, l] == pytest.approx(two_sided / 2, rel=1e-10)
        expected = stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue if b else 1.0
        assert p[j, l] == pytest.approx(expected, rel=1e-10)


def test_mcnemar_agrees_with_rankcis_sign_test():
    rng = np.random.default_rng(5)
    x = _binary(rng, 25, 4)
    ours = mcnemar_tests(x)
    theirs = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), "sign").pvalue
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, equal_nan=True)


def test_mcnemar_level_is_exact_and_the_mid_p_is_not():
    # conditionally on D discordant units, the size of "p <= alpha" under pi = 1/2
    alpha, worst, worst_mid = 0.05, 0.0, 0.0
    for total in range(1, 61):
        b = np.arange(total + 1)
        pmf = stats.binom.pmf(b, total, 0.5)
        worst = max(worst, pmf[mcnemar_pvalue(b, total - b) <= alpha].sum())
        worst_mid = max(worst_mid, pmf[mcnemar_pvalue(b, total - b, mid=True) <= alpha].sum())
    assert worst <= alpha
    assert worst_mid > alpha  # the documented reason the mid-p is not offered as valid


def test_mcnemar_rejects_non_binary():
    with pytest.raises(ValueError, match="0/1"):
        mcnemar_tests([[0.5, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="counts"):
        mcnemar_pvalue(-1, 2)


def test_sign_vectors_are_all_distinct():
    s = sign_vectors(4)
    assert s.shape == (16, 4) and len({tuple(r) for r in s}) == 16
    assert np.all(s[0] == 1)
    assert sign_vectors(0).shape == (1, 0)


def _loop_signflip(d, delta=0.0):
    c = np.asarray(d) - delta
    t = c.sum()
    hits = [np.dot(s, c) >= t - 1e-9 * np.abs(c).sum() for s in product((-1.0, 1.0), repeat=len(c))]
    return float(np.mean(hits))


@pytest.mark.parametrize("n", [1, 2, 5, 9, 12])
@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_signflip_exact_against_a_direct_loop(n, delta):
    rng = np.random.default_rng(n)
    x = rng.beta(2, 3, size=(n, 4)).round(1)  # lattice values: many ties in T(s)
    p = signflip_tests(x, delta)
    for j, l in product(range(4), repeat=2):
        if j != l:
            assert p[j, l] == pytest.approx(_loop_signflip(x[:, j] - x[:, l], delta), abs=1e-15)


def test_signflip_on_binary_units_is_mcnemar():
    rng = np.random.default_rng(11)
    x = _binary(rng, 14, 5)
    np.testing.assert_allclose(signflip_tests(x), mcnemar_tests(x), rtol=1e-12, equal_nan=True)


def test_signflip_monte_carlo_is_valid_and_close_to_exact():
    rng = np.random.default_rng(2)
    d = rng.normal(0.1, 0.3, size=(14, 6))
    exact = signflip_pvalue(d)
    mc = signflip_pvalue(d, exact_max_n=0, reps=20_000, rng=7)
    assert np.all(mc >= 1 / 20_001)
    np.testing.assert_allclose(mc, exact, atol=4 * np.sqrt(0.25 / 20_000))
    # the same seed gives the same p-values; a 1-D d gives a scalar
    np.testing.assert_array_equal(mc, signflip_pvalue(d, exact_max_n=0, reps=20_000, rng=7))
    assert np.ndim(signflip_pvalue(d[:, 0])) == 0


def test_signflip_monte_carlo_against_rankcis_permutation_test():
    rng = np.random.default_rng(4)
    x = rng.beta(2, 2, size=(30, 3))
    ours = signflip_tests(x, reps=40_000, rng=1)
    theirs = rankci.pairwise_tests(
        rankci.Scores.from_matrix(x).units(), "permutation", reps=40_000, rng=2
    ).pvalue
    np.testing.assert_allclose(ours, theirs, atol=4 * np.sqrt(0.25 / 40_000))


def test_signflip_level_under_symmetry_is_exact():
    # symmetric differences: P(p <= alpha) <= alpha; p takes the values k / 2^n, so the size
    # is the largest k / 2^n <= alpha (with continuous d, no ties)
    rng = np.random.default_rng(9)
    n, reps, alpha = 6, 4000, 0.05
    d = rng.standard_normal((n, reps))
    rate = float((signflip_pvalue(d) <= alpha).mean())
    assert rate <= 3 / 64 + 3 * np.sqrt(3 / 64 / reps)


def test_signflip_rejects_missing_cells():
    with pytest.raises(ValueError, match="complete"):
        signflip_tests([[0.1, np.nan], [0.2, 0.3]])
    with pytest.raises(ValueError, match="delta"):
        signflip_pvalue([0.1, 0.2], delta=-1)
