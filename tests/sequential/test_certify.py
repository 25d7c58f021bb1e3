"""Certifiers: worked examples B and C, inclusions, brute force, integer program == enumeration."""

import warnings

import numpy as np
import pytest
from rcs_reference import exact_path, shortcut_naive

from rankci.sequential import IntegerProgram, PairWealth, make_certifier
from rankci.sequential.certify import resolve_certifier, shortcut_statistic


def _log(e):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(e, dtype=float))


def _example_b():
    e = np.ones((3, 3))
    e[0, 1], e[0, 2], e[1, 0], e[2, 1], e[1, 2], e[2, 0] = 10, 90, 0.2, 21, 0, 0
    return _log(e)


def test_example_b():
    exact = make_certifier("exact", 3, 0.1)
    certified = exact.look(_example_b())
    assert np.argwhere(certified).tolist() == [[0, 2]]
    assert exact.n_surviving == 4
    assert exact.rank_sets() == [[1], [1, 2, 3], [2, 3]]
    for name in ("ilp", "shortcut", "bonferroni"):
        assert np.argwhere(make_certifier(name, 3, 0.1).look(_example_b())).tolist() == [[0, 2]]


@pytest.mark.parametrize("b", [0.5, 0.1])
@pytest.mark.parametrize(
    ("a", "exact_certifies", "shortcut_certifies"),
    [(3.9, False, False), (4.0, True, False), (4.5, True, False), (6.5, True, True)],
)
def test_example_c_exact_beats_shortcut(a, b, exact_certifies, shortcut_certifies):
    e = np.full((3, 3), 1e-3)
    e[0, 2], e[0, 1], e[1, 2] = 1e6, a / 0.05, b
    lw = _log(e)
    assert make_certifier("exact", 3, 0.05).look(lw)[0, 1] == exact_certifies
    assert make_certifier("ilp", 3, 0.05).look(lw)[0, 1] == exact_certifies
    assert make_certifier("shortcut", 3, 0.05).look(lw)[0, 1] == shortcut_certifies


def _random_path(m, looks, rng):
    """Log-wealth matrices of a random walk with pair-specific drifts (both signs)."""
    drift = rng.normal(0.0, 1.0, (m, m))
    drift = drift - drift.T  # j beats l roughly when l loses to j
    steps = drift[None] * 0.6 + rng.normal(0.0, 1.2, (looks, m, m))
    path = np.cumsum(steps, axis=0)
    for lw in path:
        np.fill_diagonal(lw, np.nan)
    return list(path)


def test_inclusions_bonferroni_shortcut_exact_on_random_paths():
    rng = np.random.default_rng(7)
    strictly = {"shortcut over bonferroni": 0, "exact over shortcut": 0}
    for run in range(16):
        m = 3 + run % 5
        bon, short, ex = (make_certifier(n, m, 0.05) for n in ("bonferroni", "shortcut", "exact"))
        for lw in _random_path(m, 25, rng):
            b, s, e = bon.look(lw), short.look(lw), ex.look(lw)
            assert not (b & ~s).any()
            assert not (s & ~e).any()
            strictly["shortcut over bonferroni"] += int((s & ~b).sum())
            strictly["exact over shortcut"] += int((e & ~s).sum())
    # the paths are informative: each inclusion is strict somewhere
    assert min(strictly.values()) > 0, strictly


def test_exact_enumeration_equals_brute_force_along_paths():
    rng = np.random.default_rng(42)
    for m in (3, 4):
        for _ in range(3):
            path = _random_path(m, 12, rng)
            exact = make_certifier("exact", m, 0.1)
            for lw, (certified, rank_sets) in zip(path, exact_path(path, 0.1)):
                assert np.array_equal(exact.look(lw), certified)
                assert exact.rank_sets() == rank_sets


@pytest.mark.parametrize("m", [3, 4, 5, 6])
def test_integer_program_equals_enumeration_along_random_paths(m):
    rng = np.random.default_rng(100 + m)
    solves = 0
    for _ in range(3 if m < 6 else 2):
        exact = make_certifier("exact", m, 0.05)
        fast, plain = IntegerProgram(m, 0.05), IntegerProgram(m, 0.05, heuristics=False)
        counts = []
        for lw in _random_path(m, 14, rng):
            expected = exact.look(lw)
            assert np.array_equal(fast.look(lw), expected)
            assert np.array_equal(plain.look(lw), expected)
            counts.append(int(expected.sum()))
        solves += plain.n_solves
        assert 0 < max(counts) < m * (m - 1) / 2 or min(counts) < max(counts)
    assert solves > 0


def test_shortcut_statistic_against_loops():
    rng = np.random.default_rng(3)
    for m in (4, 7, 60):
        lw = rng.normal(2.0, 3.0, (m, m))
        np.fill_diagonal(lw, np.nan)
        alpha = 0.05
        expected = shortcut_naive(lw, alpha) if m < 10 else None
        got = make_certifier("shortcut", m, alpha).look(lw)
        if expected is not None:
            assert np.array_equal(got, expected)
        cap = m * (m - 1) / alpha
        e = np.minimum(np.exp(np.nan_to_num(lw, nan=-np.inf)), cap)
        rows = np.arange(m)
        stat = shortcut_statistic(e, ~np.eye(m, dtype=bool))
        j, l = 1, 2
        naive = e[j, l] + sum(min(e[j, k], e[k, l]) for k in rows if k not in (j, l))
        np.testing.assert_allclose(stat[j, l], naive, rtol=1e-12)


def test_certifier_choice():
    assert resolve_certifier("auto", 8) == "exact"
    assert resolve_certifier("auto", 9) == "ilp"  # the integer program while it stays fast
    assert resolve_certifier("auto", 16) == "ilp"
    assert resolve_certifier("auto", 17) == "shortcut"
    with pytest.raises(ValueError, match="limited to 8 models"):
        resolve_certifier("exact", 9)
    with pytest.raises(ValueError, match="unknown certifier"):
        resolve_certifier("closed", 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_certifier("ilp", 31, 0.05)
    assert any("integer-program" in str(w.message) for w in caught)


def test_all_orders_eliminated_certifies_everything():
    """Only possible on the error event: the exact test then reports every pair (a cycle)."""
    exact = make_certifier("exact", 3, 0.05)
    lw = np.full((3, 3), 10.0)
    np.fill_diagonal(lw, np.nan)
    assert exact.look(lw).sum() == 6 and exact.n_surviving == 0


def test_integer_program_equals_enumeration_for_eight_models_on_a_simulated_run():
    rng = np.random.default_rng(8)
    d = rng.normal(size=2000)[:, None]
    x = (rng.random((2000, 8)) < 1 / (1 + np.exp(d - np.linspace(0.6, -0.6, 8)))).astype(float)
    wealth = PairWealth(8, n_items=2000)
    exact = make_certifier("exact", 8, 0.05)
    fast, plain = IntegerProgram(8, 0.05), IntegerProgram(8, 0.05, heuristics=False)
    surviving = []
    for start in range(0, 2000, 100):
        wealth.update(x[start : start + 100])
        lw = wealth.log_wealth()
        expected = exact.look(lw)
        assert np.array_equal(fast.look(lw), expected)
        assert np.array_equal(plain.look(lw), expected)
        surviving.append(exact.n_surviving)
    assert surviving[0] > 1000 and surviving[-1] < 100  # the run goes from open to settled
