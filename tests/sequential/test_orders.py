"""Weak orders: ordered Bell numbers, enumeration, ranks and sums over T(W)."""

from math import comb, factorial

import numpy as np
import pytest
from rcs_reference import weak_orders_bruteforce

from rankci.sequential import order_table, ordered_bell, weak_orders

# docs/design.md / OEIS A000670
FUBINI = [1, 3, 13, 75, 541, 4683, 47293, 545835]


def _stirling2(n, k):
    return sum((-1) ** (k - j) * comb(k, j) * j**n for j in range(k + 1)) // factorial(k)


def test_ordered_bell_numbers():
    assert [ordered_bell(m) for m in range(1, 9)] == FUBINI
    # independent formula: sum_k k! S(n, k)
    for n in range(1, 12):
        assert ordered_bell(n) == sum(factorial(k) * _stirling2(n, k) for k in range(n + 1))


@pytest.mark.parametrize("m", range(1, 9))
def test_enumeration_counts_distinct_valid_orders(m):
    levels = weak_orders(m)
    assert levels.shape == (FUBINI[m - 1], m)
    keys = levels.astype(np.int64) @ (m ** np.arange(m))
    assert len(np.unique(keys)) == len(levels)
    used = np.sort(levels, axis=1)
    # the levels in use are exactly 0..k-1 (no gap)
    assert used[:, 0].max() == 0
    if m > 1:
        gaps = np.diff(used, axis=1)
        assert gaps.max() <= 1 and gaps.min() >= 0


def test_enumeration_equals_brute_force_for_five_models():
    got = {tuple(row) for row in weak_orders(5).tolist()}
    assert got == set(weak_orders_bruteforce(5))


def test_table_ranks_states_and_sums():
    table = order_table(5)
    levels = table.levels.astype(int)
    m = 5
    # rank = 1 + number of models strictly above
    ranks = 1 + (levels[:, None, :] < levels[:, :, None]).sum(axis=2)
    assert np.array_equal(table.ranks, ranks)
    rng = np.random.default_rng(0)
    w = rng.normal(size=(m, m))
    direct = np.array(
        [sum(w[j, l] for j in range(m) for l in range(m) if j != l and lv[j] >= lv[l])
         for lv in levels]
    )  # fmt: skip
    np.testing.assert_allclose(table.t_sums(w), direct, atol=1e-12)
    rows = np.array([0, 7, 100, 540])
    np.testing.assert_allclose(table.t_sums(w, rows=rows), direct[rows], atol=1e-12)
    # |T(W)| = M(M-1)/2 + tied pairs
    sizes = table.t_sums(np.ones((m, m)))
    tied = (levels[:, :, None] == levels[:, None, :]).sum(axis=(1, 2)) - m
    np.testing.assert_allclose(sizes, m * (m - 1) / 2 + tied / 2)


def test_summaries_count_states_and_ranks():
    table = order_table(6)
    rows = np.random.default_rng(1).choice(table.n_orders, 900, replace=False)
    states = table.states(rows)
    expected_states = np.stack([(states == s).sum(axis=0) for s in range(3)], axis=1)
    ranks = table.ranks[rows]
    expected_ranks = np.array([[(ranks[:, j] == r).sum() for r in range(7)] for j in range(6)])
    got_states, got_ranks = table.summarize(table.codes[:, rows], table.rank_codes[:, rows])
    assert np.array_equal(got_states, expected_states)
    assert np.array_equal(got_ranks, expected_ranks)
    # the whole table: every pair is tied in as many orders as ... both strict states are equal
    assert np.array_equal(table.state_counts[:, 0], table.state_counts[:, 2])
    assert table.rank_counts.sum(axis=1).tolist() == [table.n_orders] * 6


def test_order_table_limits():
    with pytest.raises(ValueError, match="limited to 8 models"):
        order_table(9)
