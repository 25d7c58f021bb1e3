"""Fast, seeded versions of the coverage study in validation/coverage_holm.py.

Each check uses a few hundred replicates, so the bounds sit about 2.5 Monte-Carlo standard errors
below the nominal 95 %: a method that under-covers fails, a valid one passes (the seeds are fixed).
"""

import numpy as np
import pytest

import rankci
from rankci.simulate import simulate_scores


def _coverage(
    ability,
    n_items,
    reps,
    seed,
    unit="item",
    test="t",
    coverage="simultaneous",
    delta=0.0,
    **simulation,
):
    rng = np.random.default_rng(seed)
    covered_all, covered_each, false_claims = 0, np.zeros(len(ability)), 0
    for _ in range(reps):
        sim = simulate_scores(ability, n_items, rng=rng, **simulation)
        above = (sim.theta[None, :] > sim.theta[:, None] + 1e-12).sum(axis=1)
        at_least = (sim.theta[None, :] >= sim.theta[:, None] - 1e-12).sum(axis=1)
        r = rankci.rank(sim.scores, unit=unit, test=test, coverage=coverage, delta=delta)
        ok = (r.lower <= 1 + above) & (r.upper >= at_least)
        covered_all += ok.all()
        covered_each += ok
        if r.dominance is not None:
            gaps = sim.theta[:, None] - sim.theta[None, :]
            false_claims += bool((r.dominance & (gaps <= delta)).any())
    return covered_all / reps, covered_each.min() / reps, false_claims / reps


# ten tied models: most replications rightly certify nothing, and rankci says so each time
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
@pytest.mark.parametrize("test", ["t", "wilcoxon", "sign"])
def test_ten_tied_models_keep_simultaneous_coverage(test):
    cover, _, false = _coverage([0.3] * 10, 200, 250, seed=1, test=test)
    assert cover >= 0.93 and false <= 0.07


def test_near_ties_marginal_coverage_for_every_model():
    _, each, _ = _coverage(
        [1.0, 0.98, 0.62, 0.60, 0.22, 0.20], 1000, 300, seed=2, coverage="marginal"
    )
    assert each >= 0.92


def test_cluster_units_cover_on_clustered_data():
    cover, _, _ = _coverage(
        [0.6, 0.3, 0.3, 0.0, -0.3, -0.6],
        600,
        250,
        seed=3,
        unit="cluster",
        n_clusters=30,
        sigma_cluster=0.7,
        sigma_item=1.2,
        sigma_model_cluster=0.3,
    )
    assert cover >= 0.92


def test_margin_claims_are_true_beyond_delta():
    cover, _, false = _coverage([0.40, 0.36, 0.30, 0.22, 0.0], 3000, 200, seed=4, delta=0.02)
    assert cover >= 0.92 and false <= 0.08
