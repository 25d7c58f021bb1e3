"""Properties every ranking must have, on random leaderboards (hypothesis)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankci

# random boards of 5-120 items: rankci rightly says when nothing is certified or when too few units
# can reach alpha; the properties here hold whatever it says (the warnings' own tests are elsewhere)
pytestmark = [
    pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning"),
    pytest.mark.filterwarnings(
        "ignore:with .* units the smallest attainable p-value:rankci.RankciWarning"
    ),
]

TESTS = ["t", "z", "wilcoxon", "yuen", "sign"]


@st.composite
def leaderboards(draw):
    m = draw(st.integers(2, 7))
    n = draw(st.integers(5, 120))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    accuracy = rng.uniform(0.2, 0.9, m)
    if draw(st.booleans()):
        accuracy[: m // 2] = accuracy[0]  # some exact ties
    x = (rng.random((n, m)) < accuracy).astype(float)
    return x


def _rank(x, **options):
    return rankci.rank(rankci.Scores.from_matrix(x), **options)


common = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(
    leaderboards(),
    st.sampled_from(TESTS),
    st.sampled_from(["simultaneous", "marginal"]),
    st.integers(0, 10_000),
)
def test_relabelling_models_relabels_the_output(x, test, coverage, seed):
    permutation = np.random.default_rng(seed).permutation(x.shape[1])
    base = _rank(x, test=test, coverage=coverage)
    moved = _rank(x[:, permutation], test=test, coverage=coverage)
    # column k of the moved matrix is model permutation[k] of the base; labels are m0, m1, ...
    for k, original in enumerate(permutation):
        assert moved.lower[k] == base.lower[original]
        assert moved.upper[k] == base.upper[original]
        if coverage == "simultaneous":
            assert moved.tier[k] == base.tier[original]
            for k2, original2 in enumerate(permutation):
                assert moved.dominance[k, k2] == base.dominance[original, original2]


@common
@given(leaderboards(), st.sampled_from(TESTS))
def test_dominance_is_acyclic_closed_and_bounds_are_ordered(x, test):
    r = _rank(x, test=test)
    d = r.dominance
    assert not np.diag(d).any()
    assert not (d & d.T).any()
    composed = (d.astype(int) @ d.astype(int)) > 0
    assert not (composed & ~d).any()  # transitively closed
    assert (r.lower <= r.upper).all() and (r.lower >= 1).all() and (r.upper <= r.n_models).all()
    assert (r.tier <= r.lower).all()


@common
@given(leaderboards(), st.sampled_from(["t", "z", "yuen"]))
def test_mean_based_intervals_contain_the_observed_rank(x, test):
    r = _rank(x, test=test)
    if test == "yuen":
        return  # yuen ranks trimmed means, not means
    assert (r.lower <= r.rank).all() and (r.rank <= r.upper).all()


@common
@given(leaderboards(), st.sampled_from(TESTS), st.sampled_from(["simultaneous", "marginal"]))
def test_a_smaller_alpha_never_gives_narrower_intervals(x, test, coverage):
    wide = _rank(x, test=test, coverage=coverage, alpha=0.01)
    narrow = _rank(x, test=test, coverage=coverage, alpha=0.1)
    assert (wide.lower <= narrow.lower).all() and (wide.upper >= narrow.upper).all()


@common
@given(
    leaderboards(),
    st.sampled_from(["t", "z", "wilcoxon", "yuen"]),
    st.floats(0.0, 0.1),
    st.floats(0.0, 0.1),
)
def test_a_larger_delta_never_gives_more_dominances(x, test, delta_a, delta_b):
    small, large = sorted([delta_a, delta_b])
    loose = _rank(x, test=test, delta=small)
    strict = _rank(x, test=test, delta=large)
    assert not (strict.dominance & ~loose.dominance).any()
