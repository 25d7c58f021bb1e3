"""The speed work on the Bradley-Terry path changed no number: the strengths and covariances of
a seeded board equal, to 1e-12, those the code on main computed (tests/fixtures/votes_fit/:
expected_fits.npz written by make_expected.py at commit 6a6a76e, its provenance)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from rankci.votes import fit_bradley_terry

HERE = Path(__file__).parents[1] / "fixtures" / "votes_fit"
spec = importlib.util.spec_from_file_location("make_expected", HERE / "make_expected.py")
make = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make)
EXPECTED = np.load(HERE / "expected_fits.npz")
VOTES = make.board()


@pytest.mark.parametrize("name", sorted(make.CASES))
def test_fit_equals_the_fit_of_main(name):
    fit = fit_bradley_terry(VOTES, **make.CASES[name])
    np.testing.assert_allclose(fit.strength, EXPECTED[f"{name}_strength"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fit.cov, EXPECTED[f"{name}_cov"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fit.params_cov, EXPECTED[f"{name}_params_cov"], rtol=0, atol=1e-12)


def test_dense_counting_equals_the_sorting_path(monkeypatch):
    # the bincount paths (M^2 pair keys, integer cluster ids) against the np.unique / sparse
    # paths they replace, on a board with a separated top model and two pools
    import rankci.votes.bradley_terry as bt
    from rankci.votes import Votes

    rng = np.random.default_rng(5)
    a = rng.integers(1, 6, 400)
    b = (a - 1 + rng.integers(1, 5, 400)) % 5 + 1
    out = rng.integers(0, 4, 400)
    top = Votes.from_arrays(np.r_[a, 0, 0], np.r_[b, 1, 2], np.r_[out, 0, 0], models=list("tabcde"))
    pools = Votes.from_arrays([0, 1, 2, 3], [1, 0, 3, 2], [0, 0, 0, 1], models=list("wxyz"))
    ids = rng.integers(0, 50, 1000) * 7 + 3
    dense = (bt.separation_report(top), bt.comparison_pools(pools), bt.unique_codes(ids))
    assert dense[0]["t"] == "lower bound" and len(dense[1]) == 2
    monkeypatch.setattr(bt, "_DENSE_KEYS", 0)
    ids_big = ids * 10**9  # beyond the dense range: np.unique
    sparse = (bt.separation_report(top), bt.comparison_pools(pools), bt.unique_codes(ids_big))
    assert dense[0] == sparse[0] and dense[1] == sparse[1]
    np.testing.assert_array_equal(dense[2][1], sparse[2][1])
    np.testing.assert_array_equal(dense[2][0] * 10**9, sparse[2][0])
    np.testing.assert_array_equal(dense[2][0], np.unique(ids))
