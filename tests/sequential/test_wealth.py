"""Pairwise wealths: worked numbers (rcs-examples A) and a per-item log-space reference."""

import numpy as np
import pytest
from rcs_reference import EXAMPLE_A, PAIRS_A, all_log_wealth, pair_log_wealth

from rankci.sequential import PairWealth

PAIRS = PAIRS_A
TABLE_A = {
    ("fixed", "iid"): [0.828036, 0.828036, -1.215267, -0.193616, -1.215267, -0.193616],
    ("fixed", "finite"): [8.903849, 9.063851, -1.683865, -0.539847, -1.537097, -0.084201],
    ("mixture", "iid"): [0.695044, 0.695044, -0.655081, -0.176783, -0.655081, -0.176783],
    ("mixture", "finite"): [9.728764, 9.704816, -0.819412, -0.366540, -0.770118, -0.110247],
    ("agrapa", "iid"): [0.271934, 0.271934, 0, 0, 0, -1.163151],
    ("agrapa", "finite"): [6.916586, 6.329154, 0, 0, 0, -1.195597],
    ("ons", "iid"): [0.365624, 0.378645, -0.586556, -1.017978, -0.693147, -1.321215],
    ("ons", "finite"): [9.166754, 10.164287, -0.079607, -0.902490, -0.372235, -1.359719],
}
PATH_A = {
    "fixed": [0.223144, 0.253915, 0.532629, 0.627939, 0.745722, 1.205254, 0.917572, 1.728502,
              4.976937, 8.903849],
    "mixture": [0.175633, 0.202357, 0.452091, 0.548752, 0.673894, 1.180266, 0.774245, 1.654700,
                5.244757, 9.728764],
}  # fmt: skip


@pytest.mark.parametrize(("bet", "sampling"), list(TABLE_A))
def test_example_a_final_log_wealth(bet, sampling):
    wealth = PairWealth(3, sampling=sampling, n_items=10, bet=bet)
    wealth.update(EXAMPLE_A)
    lw = wealth.log_wealth()
    got = np.array([lw[j, l] for j, l in PAIRS])
    np.testing.assert_allclose(got, TABLE_A[bet, sampling], atol=1e-6, rtol=0)


@pytest.mark.parametrize("bet", ["fixed", "mixture"])
def test_example_a_path_item_by_item(bet):
    wealth = PairWealth(3, sampling="finite", n_items=10, bet=bet)
    path = []
    for item in EXAMPLE_A:
        wealth.update(item)
        path.append(wealth.log_wealth()[0, 1])
    np.testing.assert_allclose(path, PATH_A[bet], atol=1e-6, rtol=0)


def test_reference_reproduces_example_a():
    """The test's own reference agrees with the worked numbers, so it can judge random data."""
    for (bet, sampling), row in TABLE_A.items():
        n = 10 if sampling == "finite" else None
        got = [pair_log_wealth(EXAMPLE_A[:, j] - EXAMPLE_A[:, l], n_items=n, bet=bet)[-1]
               for j, l in PAIRS]  # fmt: skip
        np.testing.assert_allclose(got, row, atol=1e-6)


@pytest.mark.parametrize("bet", ["mixture", "agrapa", "ons", "fixed"])
@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_blocks_and_retirement_match_the_per_item_reference(bet, sampling):
    """Continuous scores, blocks of random sizes across commit points, two retirements, clipping
    of the finite-N offset near the end of the benchmark."""
    rng = np.random.default_rng(11)
    n, m = 420, 5
    x = rng.random((n, m)) ** np.array([0.5, 1.0, 1.5, 2.0, 1.0])
    retired_at = [None, None, 150, None, 333]
    wealth = PairWealth(m, sampling=sampling, n_items=n, bet=bet, lam=0.4)
    t = 0
    while t < n:
        size = int(rng.integers(1, 70))
        for j, stop in enumerate(retired_at):
            if stop is not None and t >= stop:
                wealth.retire([j])
        step = min(size, n - t, *[s - t for s in retired_at if s is not None and s > t])
        wealth.update(x[t : t + step])
        t += step
    expected = all_log_wealth(
        x, n_items=n if sampling == "finite" else None, bet=bet, lam=0.4, retired_at=retired_at
    )
    np.testing.assert_allclose(wealth.log_wealth(), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("bet", ["mixture", "agrapa", "fixed"])
def test_item_by_item_equals_blocks_bit_for_bit(bet):
    rng = np.random.default_rng(5)
    x = rng.random((700, 6)) ** np.linspace(0.5, 2.0, 6)  # continuous scores
    one, many = (PairWealth(6, n_items=700, bet=bet) for _ in range(2))
    for item in x:
        one.update(item)
    for start in range(0, 700, 97):
        many.update(x[start : start + 97])
    assert np.array_equal(one.component_log_wealth(), many.component_log_wealth())
    assert np.array_equal(one.state()["arrays"]["part"], many.state()["arrays"]["part"])


def test_a_prefix_of_a_finite_stream_uses_the_full_n():
    rng = np.random.default_rng(2)
    x = (rng.random((60, 3)) < [0.7, 0.5, 0.4]).astype(float)
    wealth = PairWealth(3, sampling="finite", n_items=200, bet="mixture")
    wealth.update(x)  # 60 of the 200 items
    full_n = all_log_wealth(x, n_items=200)
    prefix_n = all_log_wealth(x, n_items=60)
    np.testing.assert_allclose(wealth.log_wealth(), full_n, atol=1e-10)
    assert not np.allclose(np.nan_to_num(full_n), np.nan_to_num(prefix_n), atol=1e-3)


def test_no_overflow_when_the_finite_offset_makes_wealth_explode():
    """Near the end of a benchmark a clearly better model's wealth grows by up to 2/eps per item."""
    x = np.zeros((1000, 2))
    x[:, 0] = 1.0
    wealth = PairWealth(2, sampling="finite", n_items=1000)
    wealth.update(x)
    lw = wealth.log_wealth()
    assert np.isfinite(lw[0, 1]) and lw[0, 1] > 500
    np.testing.assert_allclose(lw[0, 1], all_log_wealth(x, n_items=1000)[0, 1], rtol=1e-9)


def test_state_round_trip_and_errors():
    wealth = PairWealth(3, sampling="iid", bet="agrapa")
    wealth.update(EXAMPLE_A[:4])
    copy = PairWealth.from_state(wealth.state())
    copy.update(EXAMPLE_A[4:])
    wealth.update(EXAMPLE_A[4:])
    assert np.array_equal(copy.log_wealth(), wealth.log_wealth(), equal_nan=True)
    with pytest.raises(ValueError, match="n_items"):
        PairWealth(3, sampling="finite")
    with pytest.raises(ValueError, match="exceed the benchmark"):
        PairWealth(3, sampling="finite", n_items=5).update(EXAMPLE_A)
    with pytest.raises(ValueError, match="unknown bet"):
        PairWealth(3, sampling="iid", bet="kelly")
    with pytest.raises(ValueError, match="lam must be a bet"):
        PairWealth(3, sampling="iid", bet="fixed", lam=1.0)
    with pytest.raises(ValueError, match="3 models"):
        PairWealth(3, sampling="iid").update(np.zeros((2, 4)))


@pytest.mark.parametrize("bet", ["mixture", "agrapa", "ons", "fixed"])
@pytest.mark.parametrize("sampling", ["finite", "iid"])
def test_log_wealth_entry_by_entry_has_the_bits_of_the_dense_formula(bet, sampling):
    """log_wealth computes the entries over flat indices; the dense (K, M, M) formula written
    out here (the mixture's stable log-mean-exp of the components) gives the same bits."""
    x = np.random.default_rng(5).random((500, 7))
    w = PairWealth(7, sampling=sampling, n_items=600, bet=bet)
    w.update(x[:250])
    w.retire([2])
    w.freeze_pairs(np.eye(7, k=1, dtype=bool))
    w.update(x[250:])
    comp = w.component_log_wealth()
    if comp.shape[0] == 1:
        dense = comp[0].copy()
    else:
        top = comp.max(axis=0)
        dense = top + np.log(np.exp(comp - top).sum(axis=0)) - np.log(comp.shape[0])
    np.fill_diagonal(dense, np.nan)
    assert np.array_equal(w.log_wealth(), dense, equal_nan=True)
    some = np.random.default_rng(6).random((7, 7)) < 0.3
    part = w.log_wealth(some)
    expected = np.where(some & ~np.eye(7, dtype=bool), dense, np.nan)
    assert np.array_equal(part, expected, equal_nan=True)
