"""The vectorised studentized range (issue 18) against scipy, closed forms and direct integration,
and the post-hoc procedures on it against the old per-pair (scipy) path."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import rankci
from rankci.analyses.posthoc import (
    EXACT_PAIRS,
    nemenyi,
    studentized_range_isf,
    studentized_range_sf,
    tukey_hsd,
    tukey_pvalues,
)


def _units(y: np.ndarray) -> rankci.UnitScores:
    n, k = y.shape
    models = tuple(f"m{j:03d}" for j in range(k))
    return rankci.UnitScores(y, models, tuple(map(str, range(n))), "item", "complete", {}, False)


# ---------------------------------------------------------------------- the distribution
@pytest.mark.parametrize("k", [3, 40])
@pytest.mark.parametrize("df", [1.0, 4.0, 300.0, 20000.0, np.inf])
def test_sf_agrees_with_scipy(k, df):
    """scipy integrates each value adaptively to 1e-11 absolute on the cdf; the vectorised rule
    agrees to 1e-10 absolute, and to 1e-5 relative wherever p >= 1e-5."""
    q = np.array([0.2, 1.0, 2.5, 4.0, 5.5, 7.0, 9.0])
    ours = studentized_range_sf(q, k, df)
    ref = stats.studentized_range.sf(q, k, df)
    assert np.max(np.abs(ours - ref)) <= 1e-10
    big = ref >= 1e-5
    assert ours[big] == pytest.approx(ref[big], rel=1e-5)


@pytest.mark.parametrize("df", [1.0, 3.0, 7.0, 60.0, 5000.0])
def test_two_means_is_a_t_test(df):
    """For k = 2, Q / sqrt(2) = |T_df|: the closed form holds far into the tail, where scipy's
    1 - cdf has lost every digit."""
    q = np.linspace(0.05, 25.0, 120)
    exact = 2.0 * stats.t.sf(q / np.sqrt(2.0), df)
    assert studentized_range_sf(q, 2, df) == pytest.approx(exact, rel=1e-10)


def test_two_means_infinite_df_is_a_normal_range():
    q = np.linspace(0.05, 29.0, 200)
    exact = special.erfc(q / 2.0)  # P(|Z1 - Z2| > q) = 2 P(Z > q / sqrt 2)
    assert studentized_range_sf(q, 2, np.inf) == pytest.approx(exact, rel=1e-10)


def _range_sf(x, k: int) -> np.ndarray:
    """P(R_k > x) for an array x: a 600-point Gauss-Legendre rule over z in [-9, 9 + x] of
    ``k phi(z) (a^(k-1) - (a - b)^(k-1))``, the difference written as the positive sum
    ``b sum_j a^j (a - b)^(k-2-j)`` (a = Phi(z), b = Phi(z - x)): no cancellation in the tail."""
    x = np.atleast_1d(np.asarray(x, dtype=float))[:, None]
    nodes, weights = np.polynomial.legendre.leggauss(600)
    z = -9 + (18 + x) * (nodes + 1) / 2
    a, b = special.ndtr(z), special.ndtr(z - x)
    total = sum(a**j * (a - b) ** (k - 2 - j) for j in range(k - 1))
    integrand = k * stats.norm.pdf(z) * b * total
    return (integrand * weights).sum(axis=1) * (18 + x[:, 0]) / 2


@pytest.mark.parametrize(("q", "k"), [(9.0, 12), (12.0, 30), (3.0, 4)])
def test_infinite_df_against_direct_integration(q, k):
    """Tail values (1e-10 and below) keep their relative accuracy (scipy's 1 - cdf does not)."""
    direct = float(_range_sf(q, k)[0])
    assert float(studentized_range_sf(q, k, np.inf)) == pytest.approx(direct, rel=1e-9)


def test_finite_df_against_direct_integration():
    """P(Q > q) = int f(s) P(R_k > q s) ds with a 160-point Gauss-Legendre rule over the central
    1 - 2e-12 of the chi scale (written out here, independent of the module's rule)."""
    q, k, df = 6.0, 5, 8.0
    lo, hi = np.sqrt(stats.chi2.ppf([1e-12, 1 - 1e-12], df) / df)
    x, w = np.polynomial.legendre.leggauss(160)
    s = lo + (hi - lo) * (x + 1) / 2
    density = stats.chi.pdf(s * np.sqrt(df), df) * np.sqrt(df)
    values = _range_sf(q * s, k)
    direct = float(np.sum(w * density * values) * (hi - lo) / 2) + 1e-12  # P(s < lo), range sf 1
    assert float(studentized_range_sf(q, k, df)) == pytest.approx(direct, rel=1e-7)


@pytest.mark.parametrize(("k", "df"), [(3, np.inf), (60, 900.0), (10, 2.0)])
def test_isf_agrees_with_scipy_ppf(k, df):
    ours = studentized_range_isf(0.05, k, df)
    assert ours == pytest.approx(stats.studentized_range.ppf(0.95, k, df), rel=1e-9)
    assert float(studentized_range_sf(ours, k, df)) == pytest.approx(0.05, rel=1e-10)


def test_sf_shapes_edges_and_errors():
    out = studentized_range_sf(np.array([[0.0, -1.0], [np.nan, 3.0]]), 4, [10.0, np.nan])
    assert out.shape == (2, 2)
    assert out[0, 0] == 1.0 and out[1, 0] != out[1, 0] and np.isnan(out[1, 1])
    assert np.isnan(studentized_range_sf(3.0, 4, 0.0))
    with pytest.raises(ValueError, match="k: the studentized range needs at least 2"):
        studentized_range_sf(3.0, 1, 10.0)
    with pytest.raises(ValueError, match="p must lie in"):
        studentized_range_isf(1.5, 3, 10.0)
    with pytest.raises(ValueError, match="unknown backend"):
        tukey_pvalues(np.array([1.0]), 3, 10.0, backend="fast")
    with pytest.raises(ValueError, match="unknown backend"):
        tukey_hsd(_units(np.eye(4)), backend="exact")


# ---------------------------------------------------------------------- old path against new
def test_tukey_pvalues_vectorised_equals_the_per_pair_scipy_path():
    """Mixed-model contrasts: one Satterthwaite df per pair, as in MixedModel.contrasts."""
    rng = np.random.default_rng(7)
    t = rng.normal(0, 2.5, 16)
    df = rng.uniform(8, 400, 16)
    old = tukey_pvalues(t, 30, df, backend="scipy")
    new = tukey_pvalues(t, 30, df, backend="vectorised")
    assert np.max(np.abs(new - old)) <= 1e-10


def test_auto_is_scipy_up_to_exact_pairs_and_vectorised_beyond():
    rng = np.random.default_rng(8)
    small = rng.normal(0, 3, 50)
    assert np.array_equal(
        tukey_pvalues(small, 12, np.inf), tukey_pvalues(small, 12, np.inf, backend="scipy")
    )
    large = rng.normal(0, 3, EXACT_PAIRS + 1)
    auto = tukey_pvalues(large, 46, np.inf)
    assert np.array_equal(auto, tukey_pvalues(large, 46, np.inf, backend="vectorised"))
    some = rng.choice(large.size, 25, replace=False)
    per_pair = stats.studentized_range.sf(np.sqrt(2) * np.abs(large[some]), 46, np.inf)
    assert np.max(np.abs(auto[some] - per_pair)) <= 1e-10


def test_many_models_against_per_pair_scipy_on_a_sample():
    """200 models (19,900 pairs, finite df): every p-value from one vectorised call; a random
    sample of them against scipy, value by value (the old path)."""
    rng = np.random.default_rng(9)
    t = rng.normal(0, 2.0, 19_900)
    ours = tukey_pvalues(t, 200, 5771.0)
    some = rng.choice(t.size, 12, replace=False)
    old = stats.studentized_range.sf(np.sqrt(2) * np.abs(t[some]), 200, 5771.0)
    assert np.max(np.abs(ours[some] - old)) <= 1e-10
    assert np.all(np.diff(ours[np.argsort(np.abs(t))]) <= 1e-12)  # monotone in |t|


@pytest.mark.parametrize("procedure", [tukey_hsd, nemenyi])
# random data: the subject is that the three paths agree, not Friedman's verdict
@pytest.mark.filterwarnings("ignore:Nemenyi. Friedman's test did not reject:rankci.RankciWarning")
def test_posthoc_paths_agree(procedure):
    rng = np.random.default_rng(10)
    y = rng.normal(size=(40, 6)) + rng.normal(0, 0.3, 6) + rng.normal(size=(40, 1))
    old = procedure(_units(y), backend="scipy")
    new = procedure(_units(y), backend="vectorised")
    assert new.critical_value == pytest.approx(old.critical_value, rel=1e-9)
    assert np.max(np.abs(new.table.p_adjusted - old.table.p_adjusted)) <= 1e-10
    for column in ("estimate", "se", "q"):
        assert np.array_equal(new.table[column], old.table[column])
    assert new.table.lower.to_numpy() == pytest.approx(old.table.lower.to_numpy(), rel=1e-9)
    default = procedure(_units(y))  # 15 pairs: the scipy path, the same floats
    assert np.array_equal(default.table.p_adjusted, old.table.p_adjusted)
    assert default.critical_value == old.critical_value
