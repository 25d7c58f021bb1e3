"""The validated vote table (rankci.votes.table): construction errors and pair counts."""

import re

import numpy as np
import pytest

from rankci.votes import Votes
from rankci.votes.table import A_WINS, B_WINS, TIE, TIE_BOTHBAD


def test_pair_counts_equal_a_loop_over_votes():
    rng = np.random.default_rng(7)
    m, n = 6, 400
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m  # never a == b
    outcome = rng.integers(0, 4, n)
    pc = Votes.from_arrays(a, b, outcome, models=[f"m{k}" for k in range(m)]).pair_counts()
    expected = {}
    for x, y, o in zip(a, b, outcome):
        lo, hi = min(x, y), max(x, y)
        w = expected.setdefault((lo, hi), [0, 0, 0])
        if o in (TIE, TIE_BOTHBAD):
            w[2] += 1
        elif (o == A_WINS and x == lo) or (o == B_WINS and y == lo):
            w[0] += 1
        else:
            w[1] += 1
    got = {
        (int(i), int(j)): [wi, wj, t]
        for i, j, wi, wj, t in zip(pc.i, pc.j, pc.wins_i, pc.wins_j, pc.ties)
    }
    assert got == expected
    assert pc.n_votes.sum() == n


@pytest.mark.parametrize(
    "a, b, outcome, message",
    [
        ([0, 1], [1, 1], [0, 0], "playing itself"),
        ([0, 5], [1, 0], [0, 0], "a[1] = 5 is not a model code"),
        ([0, 1], [1, 0], [0, 4], "outcome[1] = 4"),
        ([0, 1], [1], [0, 0], "b must be one-dimensional"),
        ([0.0, 1.0], [1, 0], [0, 0], "a must hold integer codes"),
    ],
)
def test_bad_votes_are_refused_naming_the_vote(a, b, outcome, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Votes.from_arrays(a, b, outcome, models=["x", "y"])


def test_duplicate_model_names_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        Votes.from_arrays([0], [1], [0], models=["x", "x"])
