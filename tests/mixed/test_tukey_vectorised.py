"""mixed_model's Tukey p-values by the vectorised studentized range (issue 30, item 3).

References: scipy's studentized range value by value (the old path), and an independent
quadrature: ``P(Q > q) = int f_df(s) P(R_k > q s) ds`` with scipy's range distribution
(``studentized_range.sf(x, k, inf)``) and scipy's chi density, integrated by ``quad``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

import rankci
from rankci.mixed.model import mixed_model


def _quadrature(q: float, k: int, df: float) -> float:
    sd = 1.0 / np.sqrt(2.0 * df)
    root = np.sqrt(df)

    def f(s):
        return stats.chi.pdf(s * root, df) * root * stats.studentized_range.sf(q * s, k, np.inf)

    low, high = max(1e-9, 1 - 14 * sd), 1 + 14 * sd
    return integrate.quad(f, low, high, epsabs=0, epsrel=1e-12, limit=400)[0]


@pytest.fixture(scope="module")
def fit():
    rng = np.random.default_rng(4)
    x = rng.normal(0, 1, (30, 1)) + np.linspace(0, 1.2, 12) + rng.normal(0, 0.8, (30, 12))
    return mixed_model(rankci.Scores.from_matrix(x, bounds=None))


def test_mixed_model_tukey_matches_scipy_pair_by_pair(fit):
    c = fit.contrasts
    k = int(np.sqrt(2 * len(c))) + 1
    assert k * (k - 1) // 2 == len(c) == 66
    assert (c.df < 2_000).all()  # where scipy's integration is accurate
    expected = np.array(
        [stats.studentized_range.sf(np.sqrt(2) * abs(t), k, d) for t, d in zip(c.t, c.df)]
    )
    big = expected > 1e-6
    assert big.sum() > 10
    got = c.p_tukey.to_numpy()
    np.testing.assert_allclose(got[big], expected[big], rtol=1e-6, atol=0)
    np.testing.assert_allclose(got[~big], expected[~big], rtol=1e-3, atol=1e-12)


@pytest.mark.parametrize("k, df", [(10, 1521.0), (35, 94758.0), (5, 40.0)])
def test_the_studentized_range_against_an_independent_quadrature(k, df):
    from rankci.evidence.studentized_range import tukey_pvalues

    t = np.array([1.0, 2.5, 4.0, 5.3]) if k > 5 else np.array([0.8, 2.0, 3.0])
    got = tukey_pvalues(t, k, np.full(t.shape, df), backend="vectorised")
    expected = np.array([_quadrature(np.sqrt(2) * v, k, df) for v in t])
    assert (expected > 1e-6).all()
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=0)
