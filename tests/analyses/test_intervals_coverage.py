"""Fast, seeded version of validation/coverage_intervals.py (full study: validation/README.md)."""

import numpy as np
from scipy import special

import rankci
from rankci.analyses.intervals import interval_arrays, score_intervals

BETA = np.array([-0.6, 0.0, 0.9])


def _truth(sigma: float) -> np.ndarray:
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    return (special.expit(BETA[:, None] + sigma * nodes) * weights).sum(axis=1) / weights.sum()


def _simulate(rng, n_clusters, size, sigma_c, sigma_i=1.0):
    cluster = np.repeat(np.arange(n_clusters), size)
    eta = (sigma_c * rng.standard_normal(n_clusters))[cluster]
    eta = eta + sigma_i * rng.standard_normal(cluster.size)
    p = special.expit(eta[:, None] + BETA)
    return (rng.random(p.shape) < p).astype(float), cluster


def _coverage(method, small_sample, replicates, n_clusters, size, sigma_c, seed):
    rng = np.random.default_rng(seed)
    theta = _truth(np.hypot(sigma_c, 1.0))
    hits = 0
    for _ in range(replicates):
        x, cluster = _simulate(rng, n_clusters, size, sigma_c)
        out = interval_arrays(x, method, 0.05, cluster=cluster, small_sample=small_sample)
        hits += ((out["lower"] <= theta) & (theta <= out["upper"])).sum()
    return hits / (replicates * BETA.size)


def test_normal_interval_covers_on_independent_items():
    assert _coverage("normal", False, 300, 400, 1, 0.0, seed=1) > 0.93


def test_naive_interval_under_covers_on_clustered_items_and_the_clustered_one_does_not():
    naive = _coverage("normal", False, 300, 30, 20, 0.6, seed=2)
    clustered = _coverage("cluster", "cr2", 300, 30, 20, 0.6, seed=2)
    assert naive < 0.88  # about 83 % in the full study
    assert clustered > 0.93  # about 95 % in the full study


def test_public_api_gives_the_engines_intervals():
    rng = np.random.default_rng(3)
    x, cluster = _simulate(rng, 30, 5, 0.6)
    scores = rankci.Scores.from_matrix(x, clusters=[f"c{c:02d}" for c in cluster])
    for method, small in (("cluster", "cr2"), ("normal", False)):
        result = score_intervals(scores, method, small_sample=small, verdict=False)
        out = interval_arrays(x, method, 0.05, cluster=cluster, small_sample=small)
        np.testing.assert_allclose(result.lower, out["lower"], rtol=1e-12)
