"""Anytime-valid score intervals (empirical-Bernstein and Hoeffding confidence sequences),
checked three ways:

* against the definition: mu is inside the running interval exactly when neither test
  supermartingale M_s(mu), computed directly item by item in plain Python, has reached 2/alpha
  at any s <= t;
* by Monte-Carlo: the running intervals miss the true mean at *some* t in at most alpha of the
  runs (sampling without replacement from a fixed population, and i.i.d. draws);
* by the sure facts: after all N items the interval is the mean itself, and it always lies in
  [S_t / N, (S_t + N - t) / N].
The full study is validation/service_score_cs.py (results in validation/README.md).
"""

import math

import numpy as np
import pytest

from rankci.sequential.meancs import MeanCS, mean_confidence_sequence

ALPHA = 0.05


def _direct_log_martingales(x, mu, n_items, bound, alpha=ALPHA):
    """log M_t(mu) of the upper and lower tests at every t, from the definitions, one item at a
    time (the bets and penalties written out as in the papers)."""
    up = down = 0.0
    total = dev2 = 0.0  # S_{i-1}; sum_{s < i} (X_s - m_s)^2
    out = []
    for i, xi in enumerate(x, start=1):
        mean_i = mu if n_items is None else (n_items * mu - total) / (n_items - i + 1)
        if bound == "hoeffding":
            lam = min(1.0, math.sqrt(8 * math.log(2 / alpha) / (i * math.log(1 + i))))
            penalty = lam**2 / 8
        else:
            m_prev = (0.5 + total) / i
            v_prev = (0.25 + dev2) / i
            lam = min(0.5, math.sqrt(2 * math.log(2 / alpha) / (v_prev * i * math.log(1 + i))))
            penalty = (xi - m_prev) ** 2 * (-math.log(1 - lam) - lam)
        up += lam * (xi - mean_i) - penalty
        down += -lam * (xi - mean_i) - penalty
        out.append(max(up, down))
        total += xi
        dev2 += (xi - (0.5 + total) / (i + 1)) ** 2
    return np.array(out)


@pytest.mark.parametrize("bound", ["bernstein", "hoeffding"])
@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_interval_is_the_set_of_means_no_martingale_rejects(sampling, bound):
    rng = np.random.default_rng(3)
    n_items = 300
    population = rng.beta(2, 3, n_items)
    x = rng.permutation(population)[:120]
    big_n = n_items if sampling == "finite" else None
    grid = np.linspace(0.0, 1.0, 2001)
    never = np.array(
        [(_direct_log_martingales(x, mu, big_n, bound) < math.log(2 / ALPHA)).all() for mu in grid]
    )
    if sampling == "finite":  # the sure range: the unseen items score in [0, 1]
        never &= (grid >= x.sum() / n_items) & (grid <= (x.sum() + n_items - len(x)) / n_items)
    assert never.any() and not never.all()
    lo_direct, hi_direct = grid[never].min(), grid[never].max()
    assert never[(grid >= lo_direct) & (grid <= hi_direct)].all()  # an interval
    lower, upper = mean_confidence_sequence(
        x[:, None], sampling=sampling, n_items=big_n, bound=bound
    )
    assert lower[0] == pytest.approx(lo_direct, abs=5.1e-4)
    assert upper[0] == pytest.approx(hi_direct, abs=5.1e-4)


def test_all_items_seen_pins_the_mean_and_sure_range_holds():
    rng = np.random.default_rng(5)
    n_items = 200
    x = (rng.random((n_items, 3)) < [0.2, 0.5, 0.9]).astype(float)
    lower, upper = mean_confidence_sequence(x, n_items=n_items, path=True)
    np.testing.assert_array_equal(lower[-1], x.mean(axis=0))
    np.testing.assert_array_equal(upper[-1], x.mean(axis=0))
    s = np.cumsum(x, axis=0)
    t = np.arange(1, n_items + 1)[:, None]
    assert np.all(lower >= s / n_items - 1e-12)
    assert np.all(upper <= (s + n_items - t) / n_items + 1e-12)
    assert np.all(np.diff(lower, axis=0) >= 0) and np.all(np.diff(upper, axis=0) <= 0)


def test_counts_stop_a_column_early():
    rng = np.random.default_rng(6)
    x = rng.random((100, 2))
    lo, hi = mean_confidence_sequence(x, n_items=100, counts=[100, 40])
    lo40, hi40 = mean_confidence_sequence(x[:40, 1:], n_items=100)
    assert (lo[1], hi[1]) == (lo40[0], hi40[0])
    x[40:, 1] = np.nan  # rows past the count are never read
    assert mean_confidence_sequence(x, n_items=100, counts=[100, 40])[0][1] == lo[1]
    none = mean_confidence_sequence(x, n_items=100, counts=[0, 40])
    assert (none[0][0], none[1][0]) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("sampling", "population"),
    [("finite", "bernoulli"), ("finite", "beta"), ("iid", "bernoulli"), ("iid", "beta")],
)
def test_time_uniform_coverage(sampling, population):
    """Fast version of the study: 1,500 runs, the miss rate over all t must stay <= alpha."""
    rng = np.random.default_rng(11)
    n_items, runs = 400, 1500
    if population == "bernoulli":
        values = (rng.random(n_items) < 0.5).astype(float)  # p = 0.5: Hoeffding is tightest
    else:
        values = rng.beta(0.5, 0.5, n_items)
    misses = 0
    for _ in range(runs):
        if sampling == "finite":
            x, mu = rng.permutation(values), values.mean()
        else:
            x, mu = rng.choice(values, n_items), values.mean()
        lower, upper = mean_confidence_sequence(
            x[:, None], sampling=sampling, n_items=n_items, path=True
        )
        # (1e-12: after all N items both bounds are the cumulative sum / N, which may differ
        # from numpy's pairwise mean in the last bit)
        misses += bool(((lower[:, 0] > mu + 1e-12) | (upper[:, 0] < mu - 1e-12)).any())
    # binomial standard error at alpha: sqrt(0.05 * 0.95 / 1500) = 0.0056
    assert misses / runs <= ALPHA + 3 * 0.0056


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="lie in"):
        mean_confidence_sequence(np.array([[1.5]]), n_items=3)
    with pytest.raises(ValueError, match="n_items"):
        mean_confidence_sequence(np.array([[0.5]]))
    with pytest.raises(ValueError, match="sampling"):
        mean_confidence_sequence(np.array([[0.5]]), sampling="bootstrap")


@pytest.mark.parametrize("bound", ["bernstein", "hoeffding"])
@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_block_by_block_equals_all_at_once_bit_for_bit(sampling, bound):
    rng = np.random.default_rng(8)
    n_items, k = 700, 4
    x = rng.random((n_items, k))
    stops = np.array([700, 650, 123, 0])
    x[np.arange(n_items)[:, None] >= stops[None, :]] = np.nan  # never read
    big_n = n_items if sampling == "finite" else None
    lower, upper = mean_confidence_sequence(
        np.nan_to_num(x), sampling=sampling, n_items=big_n, counts=stops, bound=bound, path=True
    )
    want_lo = np.where(stops > 0, lower[np.maximum(stops - 1, 0), np.arange(k)], 0.0)
    want_hi = np.where(stops > 0, upper[np.maximum(stops - 1, 0), np.arange(k)], 1.0)
    running = MeanCS(k, sampling=sampling, n_items=big_n, bound=bound)
    start = 0
    while start < n_items:
        size = int(rng.integers(1, 90))
        block = x[start : start + size]
        running.update(block, np.clip(stops - start, 0, block.shape[0]))
        start += size
    lo, hi = running.interval()
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)
    assert running.count.tolist() == stops.tolist()


def test_bernstein_is_narrower_than_hoeffding_for_low_variance_scores():
    rng = np.random.default_rng(12)
    x = rng.beta(8, 2, (2000, 1))  # judge-like scores, sd about 0.12
    lo_b, hi_b = mean_confidence_sequence(x, sampling="iid")
    lo_h, hi_h = mean_confidence_sequence(x, sampling="iid", bound="hoeffding")
    assert (hi_b - lo_b)[0] < 0.5 * (hi_h - lo_h)[0]
