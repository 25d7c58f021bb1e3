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
    np.testing.assert_allclose(
        fit.params_cov, EXPECTED[f"{name}_params_cov"], rtol=0, atol=1e-12
    )
