"""Anytime-valid score intervals (Hoeffding-type confidence sequences), checked three ways:

* against the definition: at every t, mu is inside the (un-intersected) interval exactly when
  neither test supermartingale M_t(mu), computed directly as a product, has reached 2/alpha;
* by Monte-Carlo: the running intervals miss the true mean at *some* t in at most alpha of the
  runs (sampling without replacement from a fixed population, and i.i.d. draws);
* by the sure facts: after all N items the interval is the mean itself, and it always lies in
  [S_t / N, (S_t + N - t) / N].
The full study is validation/service_score_cs.py (results in validation/README.md).
"""

import numpy as np
import pytest

from rankci.sequential.meancs import MeanCS, hoeffding_lambdas, mean_confidence_sequence

ALPHA = 0.05


def _direct_inside(x, mu, n_items, alpha=ALPHA):
    """mu not rejected at t = len(x) by either product martingale (no intersection, no clip)."""
    t = len(x)
    lam = hoeffding_lambdas(t, alpha)
    prev = np.concatenate([[0.0], np.cumsum(x)[:-1]])
    i = np.arange(1, t + 1)
    mean_i = mu if n_items is None else (n_items * mu - prev) / (n_items - i + 1)
    up = np.prod(np.exp(lam * (x - mean_i) - lam**2 / 8))
    down = np.prod(np.exp(-lam * (x - mean_i) - lam**2 / 8))
    return max(up, down) < 2 / alpha


@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_interval_is_the_set_of_means_no_martingale_rejects(sampling):
    rng = np.random.default_rng(3)
    n_items = 300
    population = rng.beta(2, 3, n_items)
    x = rng.permutation(population)[:120]
    big_n = n_items if sampling == "finite" else None
    # the un-intersected interval at t = 120: take the path's last step before intersection by
    # evaluating the one-step formula through the direct definition on a fine grid
    grid = np.linspace(0.0, 1.0, 4001)
    inside = np.array([_direct_inside(x, mu, big_n) for mu in grid])
    assert inside.any() and not inside.all()
    lo_direct, hi_direct = grid[inside].min(), grid[inside].max()
    assert np.all(inside[(grid >= lo_direct) & (grid <= hi_direct)])  # an interval
    lower, upper = mean_confidence_sequence(x[:, None], sampling=sampling, n_items=big_n, path=True)
    # the running intersection can only be narrower, and at t it equals the intersection of
    # the direct sets at t' <= t; check the final point against the direct set at t
    assert lower[-1, 0] >= lo_direct - 2.5e-4
    assert upper[-1, 0] <= hi_direct + 2.5e-4
    # and the running intersection is the intersection of every t' (direct, on the grid)
    lo_all, hi_all = 0.0, 1.0
    for t in range(1, len(x) + 1):
        ok = np.array([_direct_inside(x[:t], mu, big_n) for mu in grid[::20]])
        if ok.any():
            lo_all = max(lo_all, grid[::20][ok].min())
            hi_all = min(hi_all, grid[::20][ok].max())
    if sampling == "finite":
        s = x.sum()
        lo_all = max(lo_all, s / n_items)
        hi_all = min(hi_all, (s + n_items - len(x)) / n_items)
    assert lower[-1, 0] == pytest.approx(lo_all, abs=6e-3)
    assert upper[-1, 0] == pytest.approx(hi_all, abs=6e-3)


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
    [("finite", "bernoulli"), ("finite", "beta"), ("iid", "bernoulli")],
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
            x, mu = (rng.random(n_items) < 0.5).astype(float), 0.5
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


@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_block_by_block_equals_all_at_once_bit_for_bit(sampling):
    rng = np.random.default_rng(8)
    n_items, k = 700, 4
    x = rng.random((n_items, k))
    stops = np.array([700, 650, 123, 0])
    x[np.arange(n_items)[:, None] >= stops[None, :]] = np.nan  # never read
    big_n = n_items if sampling == "finite" else None
    lower, upper = mean_confidence_sequence(
        np.nan_to_num(x), sampling=sampling, n_items=big_n, counts=stops, path=True
    )
    want_lo = np.where(stops > 0, lower[np.maximum(stops - 1, 0), np.arange(k)], 0.0)
    want_hi = np.where(stops > 0, upper[np.maximum(stops - 1, 0), np.arange(k)], 1.0)
    running = MeanCS(k, sampling=sampling, n_items=big_n)
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
