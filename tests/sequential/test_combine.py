"""The weighted E^W (seed 004): direct sums, the exact certifier's E^W, and Monte-Carlo validity
(E[E^W] <= 1 under the null; Ville's P(sup_t E^W_t >= 1/alpha) <= alpha), each with its SE."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankci.sequential import order_table
from rankci.sequential.combine import (
    log_weighted_evalue,
    order_weighted_evalue,
    weighted_evalue,
)


def test_equals_the_direct_sum():
    gen = np.random.default_rng(0)
    e = gen.exponential(size=(7, 4))
    w = np.array([0.1, 0.2, 0.3, 0.4])
    expected = [sum(w[i] * row[i] for i in range(4)) for row in e]
    assert np.allclose(weighted_evalue(e, w), expected, rtol=1e-14)
    assert np.allclose(weighted_evalue(e.T, w, axis=0), expected, rtol=1e-14)
    assert np.allclose(np.exp(log_weighted_evalue(np.log(e), w)), expected, rtol=1e-12)


def test_log_form_does_not_overflow():
    out = log_weighted_evalue([800.0, 790.0, -np.inf], [0.5, 0.25, 0.25])
    assert out == pytest.approx(800.0 + math.log(0.5 + 0.25 * math.exp(-10.0)), rel=1e-14)
    assert log_weighted_evalue([1.0, 2.0], [0.0, 0.0]) == -np.inf


@pytest.mark.parametrize(
    ("evalues", "weights", "words"),
    [
        ([1.0, 2.0], [0.6, 0.6], "sum to at most 1"),
        ([1.0, 2.0], [1.5, -0.5], ">= 0"),
        ([1.0, 2.0], [0.5], "one weight per e-value"),
        ([1.0, -2.0], [0.5, 0.5], "e-values must be >= 0"),
        ([1.0, 2.0], [np.nan, 0.5], "finite"),
    ],
)
def test_bad_weights_and_values_are_refused(evalues, weights, words):
    with pytest.raises(ValueError, match=words):
        weighted_evalue(evalues, weights)


def test_order_evalue_is_the_weighted_mean_over_t_of_w():
    gen = np.random.default_rng(1)
    m = 4
    log_e = gen.normal(size=(m, m))
    w = gen.random((m, m))
    levels = order_table(m).levels
    got = order_weighted_evalue(log_e, levels, w)
    for row, value in zip(levels, got):
        pairs = [(j, k) for j in range(m) for k in range(m) if j != k and row[j] >= row[k]]
        total = sum(w[j, k] for j, k in pairs)
        mean = sum(w[j, k] * math.exp(log_e[j, k]) for j, k in pairs) / total
        assert math.exp(value) == pytest.approx(mean, rel=1e-12)


def test_equal_weights_eliminate_the_orders_the_exact_certifier_eliminates():
    """weights=None is the design's E^W = mean over T(W); the exact certifier's table decides
    E^W >= 1/alpha as sum over T(W) of (E - 1/alpha) >= 0."""
    gen = np.random.default_rng(2)
    m, alpha = 5, 0.1
    table = order_table(m)
    log_e = gen.normal(1.5, 1.5, size=(m, m))
    mine = order_weighted_evalue(log_e, table.levels) >= math.log(1 / alpha)
    w = np.exp(log_e) - 1 / alpha
    np.fill_diagonal(w, 0.0)
    theirs = table.t_sums(w) >= 0.0
    assert mine.any() and not mine.all()
    assert np.array_equal(mine, theirs)


def _betting_wealth(gen, sims, steps, k, lam):
    """k test martingales per replicate: prod (1 + lam_i Y_t), Y = +-1 fair and shared with
    a sign per process (dependent processes), so each wealth has expectation 1 at every t."""
    y = gen.choice([-1.0, 1.0], size=(sims, steps, 1))
    signs = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    own = gen.choice([-1.0, 1.0], size=(sims, steps, k))
    z = np.where(np.arange(k) < k // 2, y * signs, own)  # half dependent, half independent
    return np.cumprod(1.0 + lam * z, axis=1)  # (sims, steps, k)


def test_the_weighted_evalue_has_expectation_at_most_one_by_monte_carlo():
    gen = np.random.default_rng(3)
    sims, k = 20000, 4
    wealth = _betting_wealth(gen, sims, 10, k, np.array([0.2, 0.4, 0.6, 0.8]))[:, -1, :]
    w = np.array([0.4, 0.3, 0.2, 0.1])
    e = weighted_evalue(wealth, w)
    se = e.std(ddof=1) / math.sqrt(sims)
    assert e.mean() <= 1.0 + 3 * se, (e.mean(), se)
    # the check can fail: the maximum of the same e-values is not an e-value
    top = wealth.max(axis=1)
    assert top.mean() > 1.0 + 3 * top.std(ddof=1) / math.sqrt(sims)


def test_villes_inequality_for_the_weighted_eprocess_by_monte_carlo():
    gen = np.random.default_rng(4)
    sims, steps, k, alpha = 4000, 200, 4, 0.1
    wealth = _betting_wealth(gen, sims, steps, k, np.array([0.3, 0.3, 0.5, 0.5]))
    w = np.array([0.25, 0.25, 0.25, 0.25])
    process = weighted_evalue(wealth, w)  # (sims, steps)
    crossed = (process.max(axis=1) >= 1 / alpha).mean()
    se = math.sqrt(alpha * (1 - alpha) / sims)
    assert crossed <= alpha + 3 * se, (crossed, se)
    # and the check can fail: the running maximum over the processes crosses far more often
    crossed_max = (wealth.max(axis=(1, 2)) >= 1 / alpha).mean()
    assert crossed_max > alpha + 3 * se
