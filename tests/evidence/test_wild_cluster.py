"""The wild cluster bootstrap-t (rankci.evidence.wild_cluster) against direct implementations.

Oracles, none of them the code under test:

* a loop-based WCR written from the textbook definition (Cameron, Gelbach and Miller 2008): for
  every sign vector, the bootstrap sample item by item, the OLS fit on a constant, the residuals,
  the cluster-robust variance by a loop over clusters, t*; on small cases (G = 4-8, every sign
  vector enumerated) the p-values must agree to 1e-12, also with missing cells (each model's own
  items and clusters given to the loop), and the interval bounds of wild_cluster_means and of
  ``score_intervals(method="cluster-wild")`` (enumerated, or random draws from the recorded seed)
  must be where the loop's p-value crosses alpha;
* statsmodels' OLS cluster-robust standard error (CR1) and a dense-matrix CR2
  ``(I - H_gg)^{-1/2}`` computed by an eigendecomposition;
* Carter, Schnepel and Steigerwald's G* computed from the regression matrices (as the R package
  effClust does), for the mean;
* validity: under a simulated null with exchangeable clusters the p-values are about uniform and
  the intervals cover (Monte-Carlo tolerances, fixed seed).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import statsmodels.api as sm

from rankci.evidence.wild_cluster import (
    cluster_totals,
    effective_clusters,
    wild_cluster_means,
    wild_cluster_pairs,
    wild_weights,
)

WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])


# ---------------------------------------------------------------- the direct implementation


def ols_constant_t(y, cluster, mu, se_type):
    """t of ``mean(y) = mu`` with a cluster-robust SE, computed item by item and cluster by
    cluster (X a column of ones)."""
    n = len(y)
    beta = sum(y) / n
    resid = [yi - beta for yi in y]
    labels = sorted(set(cluster))
    g = len(labels)
    meat = 0.0
    for label in labels:
        members = [i for i in range(n) if cluster[i] == label]
        total = sum(resid[i] for i in members)
        if se_type == "CR1":
            meat += total**2
        else:  # CR2: 1'(I - H_gg)^{-1/2} e_g with H_gg = J/n
            meat += total**2 / (1.0 - len(members) / n)
    factor = g / (g - 1.0) if se_type == "CR1" else 1.0
    se = np.sqrt(factor * meat) / n
    return (beta - mu) / se


def reference_pvalue(y, cluster, mu, weights_list, se_type, side="two", enumerated=True):
    """WCR p-value of ``theta = mu`` by the definition, looping over draws and items (over
    random draws the observed statistic counts as one more draw)."""
    labels = sorted(set(cluster))
    t = ols_constant_t(y, cluster, mu, se_type)
    count = 0
    for w in weights_list:
        weight = {label: w[i] for i, label in enumerate(labels)}
        ystar = [mu + weight[c] * (yi - mu) for yi, c in zip(y, cluster)]
        tstar = ols_constant_t(ystar, cluster, mu, se_type)
        if side == "two":
            count += abs(tstar) >= abs(t) * (1 - 1e-9)
        else:
            count += tstar >= t - 1e-9 * abs(t)
    if enumerated:
        return count / len(weights_list)
    return (1 + count) / (len(weights_list) + 1)


def assert_inverts(
    y, labels, lower, upper, se, weights, se_type="CR1", alpha=0.05, enumerated=True
):
    """Each bound is where the loop-based symmetric p-value crosses alpha: just outside it the
    test rejects, just inside it does not."""
    eps = 1e-7 * se
    for bound, outward in ((lower, -1.0), (upper, 1.0)):
        assert np.isfinite(bound)
        out = reference_pvalue(y, labels, bound + outward * eps, weights, se_type,
                               enumerated=enumerated)  # fmt: skip
        inside = reference_pvalue(y, labels, bound - outward * eps, weights, se_type,
                                  enumerated=enumerated)  # fmt: skip
        assert out <= alpha < inside, (bound, out, inside)


def design(seed, n_clusters, n_models=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, size=n_clusters)
    cluster = np.repeat(np.arange(n_clusters), sizes)
    effect = rng.normal(0, 0.15, size=(n_clusters, n_models))[cluster]
    base = np.linspace(0.7, 0.4, n_models)
    x = (rng.random((cluster.size, n_models)) < base + effect).astype(float)
    return x, cluster


# ---------------------------------------------------------------------------- the weights


def test_rademacher_enumeration_lists_every_sign_vector_once():
    w, enumerated = wild_weights(5, reps=999)
    assert enumerated and w.shape == (32, 5)
    assert len({tuple(row) for row in w.tolist()}) == 32
    w, enumerated = wild_weights(10, reps=999, rng=1)
    assert not enumerated and w.shape == (999, 10)
    assert set(np.unique(w)) == {-1.0, 1.0}


def test_webb_weights_have_mean_zero_variance_one_and_enumerate_when_few():
    assert WEBB.mean() == pytest.approx(0.0, abs=1e-15)
    assert (WEBB**2).mean() == pytest.approx(1.0, abs=1e-15)
    w, enumerated = wild_weights(3, reps=999, weights="webb")
    assert enumerated and w.shape == (216, 3)
    w, enumerated = wild_weights(4, reps=999, weights="webb", rng=0)
    assert not enumerated and np.isin(w, WEBB).all()


# -------------------------------------------------------------------- against the loop code


@pytest.mark.parametrize("n_clusters", [4, 5, 6, 8])
@pytest.mark.parametrize("se_type", ["CR1", "CR2"])
def test_mean_pvalues_equal_the_loop_based_wcr(n_clusters, se_type):
    x, cluster = design(n_clusters, n_clusters)
    sums, sizes = cluster_totals(x, cluster)
    signs = list(itertools.product([-1.0, 1.0], repeat=n_clusters))
    for mu in (0.45, 0.6):
        res = wild_cluster_means(sums, sizes, null=mu, se=se_type)
        assert res.enumerated and res.reps == 2**n_clusters
        for m in range(x.shape[1]):
            y, labels = x[:, m].tolist(), cluster.tolist()
            expected = reference_pvalue(y, labels, mu, signs, se_type)
            assert abs(res.pvalue[m] - expected) <= 1e-12
            t = ols_constant_t(y, labels, mu, se_type)
            assert res.statistic[m] == pytest.approx(t, rel=1e-12)


def test_webb_pvalues_equal_the_loop_based_wcr_with_the_same_draws():
    x, cluster = design(11, 4)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes, null=0.5, weights="webb", reps=300, rng=7)
    w, enumerated = wild_weights(4, reps=300, weights="webb", rng=7)  # the same draws
    assert not enumerated
    for m in range(x.shape[1]):
        expected = reference_pvalue(
            x[:, m].tolist(), cluster.tolist(), 0.5, w, "CR1", enumerated=False
        )
        assert abs(res.pvalue[m] - expected) <= 1e-12


@pytest.mark.parametrize("n_clusters", [4, 6, 7])
@pytest.mark.parametrize("se_type", ["CR1", "CR2"])
def test_pair_pvalues_equal_the_loop_based_wcr(n_clusters, se_type):
    x, cluster = design(100 + n_clusters, n_clusters, n_models=4)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_pairs(sums, sizes, se=se_type)
    signs = list(itertools.product([-1.0, 1.0], repeat=n_clusters))
    for j, l in itertools.permutations(range(4), 2):
        diff = (x[:, j] - x[:, l]).tolist()
        expected = reference_pvalue(diff, cluster.tolist(), 0.0, signs, se_type, side="one")
        assert abs(res.pvalue[j, l] - expected) <= 1e-12, (j, l)
        t = ols_constant_t(diff, cluster.tolist(), 0.0, se_type)
        assert res.statistic[j, l] == pytest.approx(t, rel=1e-12)
    assert np.isnan(np.diag(res.pvalue)).all()


def test_interval_bounds_are_where_the_loop_based_pvalue_crosses_alpha():
    x, cluster = design(5, 8)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes, alpha=0.1, se="CR2")
    signs = list(itertools.product([-1.0, 1.0], repeat=8))
    for m in range(x.shape[1]):
        y, labels = x[:, m].tolist(), cluster.tolist()
        assert_inverts(y, labels, res.lower[m], res.upper[m], res.se[m], signs, "CR2", 0.1)


def test_sum_statistic_is_the_sign_flip_randomisation_test():
    x, cluster = design(9, 6)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes, null=0.55, statistic="sum")
    restricted = sums - sizes[:, None] * 0.55
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=6)))
    flipped = np.abs(signs @ restricted)
    expected = (flipped >= np.abs(restricted.sum(axis=0)) * (1 - 1e-9)).mean(axis=0)
    np.testing.assert_allclose(res.pvalue, expected, rtol=0, atol=1e-12)


# ------------------------------------------------------------------- the standard errors


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cr1_standard_error_matches_statsmodels(seed):
    x, cluster = design(seed, 7)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes, reps=64)
    pairs = wild_cluster_pairs(sums, sizes, reps=64)
    ones = np.ones((x.shape[0], 1))
    for m in range(x.shape[1]):
        fit = sm.OLS(x[:, m], ones).fit(cov_type="cluster", cov_kwds={"groups": cluster})
        assert res.se[m] == pytest.approx(float(fit.bse[0]), rel=1e-12)
    for j, l in [(0, 1), (0, 2), (1, 2)]:
        fit = sm.OLS(x[:, j] - x[:, l], ones).fit(cov_type="cluster", cov_kwds={"groups": cluster})
        assert pairs.se[j, l] == pytest.approx(float(fit.bse[0]), rel=1e-12)


def test_cr2_standard_error_matches_the_dense_bell_mccaffrey_formula():
    x, cluster = design(4, 6)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes, se="CR2", reps=64)
    n = x.shape[0]
    for m in range(x.shape[1]):
        e = x[:, m] - x[:, m].mean()
        meat = 0.0
        for g in np.unique(cluster):
            idx = cluster == g
            h = np.full((idx.sum(), idx.sum()), 1.0 / n)  # X_g (X'X)^-1 X_g'
            vals, vecs = np.linalg.eigh(np.eye(idx.sum()) - h)
            adj = vecs @ np.diag(vals**-0.5) @ vecs.T
            meat += (np.ones(idx.sum()) @ adj @ e[idx]) ** 2
        assert res.se[m] == pytest.approx(np.sqrt(meat) / n, rel=1e-12)


# ---------------------------------------------------------------- effective clusters (CSS)


def css_gstar(cluster, rho):
    """G* from the regression matrices, as effClust computes it (X a column of ones)."""
    x = np.ones((len(cluster), 1))
    xtx_inv = np.linalg.inv(x.T @ x)
    gammas = []
    for g in np.unique(cluster):
        xg = x[cluster == g]
        independent = (xtx_inv @ xg.T @ xg @ xtx_inv)[0, 0]
        u = np.ones((1, xg.shape[0])) @ xg
        correlated = (xtx_inv @ u.T @ u @ xtx_inv)[0, 0]
        gammas.append(rho * correlated + (1 - rho) * independent)
    gammas = np.array(gammas)
    big_gamma = ((len(gammas) - 1) / len(gammas)) * gammas.var(ddof=1) / gammas.mean() ** 2
    return len(gammas) / (1 + big_gamma)


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.999, 1.0])
def test_effective_clusters_matches_the_regression_definition(rho):
    rng = np.random.default_rng(5)
    cluster = np.repeat(np.arange(9), rng.integers(1, 60, size=9))
    assert effective_clusters(cluster=cluster, rho=rho) == pytest.approx(
        css_gstar(cluster, rho), rel=1e-12
    )
    sizes = np.bincount(cluster)
    assert effective_clusters(sizes, rho=rho) == pytest.approx(css_gstar(cluster, rho), rel=1e-12)


def test_effective_clusters_closed_forms_and_limits():
    sizes = np.array([152, 1001, 149, 92, 84, 430, 165, 40, 675], float)
    assert effective_clusters(sizes) == pytest.approx((sizes**2).sum() ** 2 / (sizes**4).sum())
    assert effective_clusters(sizes, rho=0) == pytest.approx(sizes.sum() ** 2 / (sizes**2).sum())
    assert effective_clusters([7, 7, 7, 7]) == pytest.approx(4.0)
    assert effective_clusters([1000, 1, 1]) < 1.01
    rows = effective_clusters(np.array([[5, 5], [1, 9]]))
    assert rows.shape == (2,) and rows[0] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="rho"):
        effective_clusters(sizes, rho=1.5)
    with pytest.raises(ValueError, match="exactly one"):
        effective_clusters()


# ----------------------------------------------------------------- symmetry and refusals


def test_reflection_and_translation_equivariance():
    x, cluster = design(21, 7)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes, se="CR2")
    flipped = wild_cluster_means(-sums, sizes, se="CR2")
    np.testing.assert_allclose(flipped.lower, -res.upper, rtol=1e-9)
    np.testing.assert_allclose(flipped.upper, -res.lower, rtol=1e-9)
    shifted = wild_cluster_means(sums + 0.25 * sizes[:, None], sizes, se="CR2")
    np.testing.assert_allclose(shifted.lower, res.lower + 0.25, atol=1e-9)
    pairs = wild_cluster_pairs(sums, sizes)
    swapped = wild_cluster_pairs(sums[:, ::-1], sizes)
    np.testing.assert_array_equal(swapped.pvalue, pairs.pvalue[::-1, ::-1])


def test_few_clusters_say_they_cannot():
    x, cluster = design(2, 5)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_means(sums, sizes)
    assert not res.bounded.any()
    assert np.isneginf(res.lower).all() and np.isposinf(res.upper).all()
    pairs = wild_cluster_pairs(sums, sizes)
    off = ~np.eye(3, dtype=bool)
    assert (pairs.pvalue[off] >= 1 / 32).all()  # one-sided: the all-ones vector reaches t
    with pytest.raises(ValueError, match="at least 2 clusters"):
        wild_cluster_means(sums[:1], sizes[:1])


def test_identical_clusters_are_refused_not_certified():
    # two copies of one cluster in which A scores 21/40 and B 20/40 (issue 25, item 1)
    sums = np.array([[21.0, 20.0], [21.0, 20.0]])
    sizes = np.array([40, 40])
    res = wild_cluster_means(sums, sizes, null=0.5)
    assert res.refused.all() and np.isnan(res.lower).all() and np.isnan(res.pvalue).all()
    pairs = wild_cluster_pairs(sums, sizes, weights="webb")
    assert pairs.refused[0, 1] and pairs.pvalue[0, 1] == 1.0 and pairs.pvalue[1, 0] == 1.0


# --------------------------------------------------------------------------------- validity


def test_null_pvalues_are_about_uniform_with_exchangeable_clusters():
    """G = 8 exchangeable clusters (equal sizes, normal cluster and item effects): the WCR
    p-values of the true mean are about uniform and the 90 % intervals cover about 90 %."""
    rng = np.random.default_rng(20261202)
    reps, g, size = 400, 8, 10
    p_mean, p_pair, covered = [], [], []
    for _ in range(reps):
        cluster = np.repeat(np.arange(g), size)
        x = rng.normal(0, 1, (g, 2))[cluster] + rng.normal(0, 1, (g * size, 2))
        sums, sizes = cluster_totals(x, cluster)
        res = wild_cluster_means(sums, sizes, null=0.0, alpha=0.1)
        p_mean.append(res.pvalue[0])
        covered.append((res.lower[0] <= 0.0) & (0.0 <= res.upper[0]))
        p_pair.append(wild_cluster_pairs(sums, sizes).pvalue[0, 1])
    p_mean, p_pair = np.array(p_mean), np.array(p_pair)
    se = np.sqrt(0.1 * 0.9 / reps)  # 0.015
    for p in (p_mean, p_pair):
        for level in (0.1, 0.25, 0.5):
            assert abs((p <= level).mean() - level) < 4 * np.sqrt(level * (1 - level) / reps)
    assert abs(np.mean(covered) - 0.9) < 4 * se


def test_pair_pvalues_in_both_directions_add_up():
    """p(j > l) + p(l > j) = 1 + the share of draws tied with t; every sign vector that differs
    from all-ones only on clusters with a zero difference reproduces t, so at least 2^z tie."""
    x, cluster = design(31, 6, n_models=3)
    sums, sizes = cluster_totals(x, cluster)
    res = wild_cluster_pairs(sums, sizes)
    for j, l in itertools.combinations(range(3), 2):
        zero = int((sums[:, j] == sums[:, l]).sum())
        excess = (res.pvalue[j, l] + res.pvalue[l, j] - 1.0) * res.reps
        assert excess >= 2**zero - 1e-9


def test_random_draw_pvalues_count_the_observed_statistic():
    """Over random draws no p-value is 0: the smallest is 1/(B + 1) (Davison and Hinkley)."""
    rng = np.random.default_rng(8)
    cluster = np.repeat(np.arange(12), 6)
    x = np.column_stack([np.ones(72), (rng.random(72) < 0.2).astype(float)])
    sums, sizes = cluster_totals(x, cluster)
    pairs = wild_cluster_pairs(sums, sizes, reps=99, rng=1)
    assert not pairs.enumerated
    assert pairs.pvalue[0, 1] == pytest.approx(1 / 100)
    w, _ = wild_weights(12, reps=99, rng=1)
    diff = (x[:, 1] - x[:, 0]).tolist()  # "1 better than 0"
    expected = reference_pvalue(diff, cluster.tolist(), 0.0, w, "CR1", "one", enumerated=False)
    assert abs(pairs.pvalue[1, 0] - expected) <= 1e-12


# ------------------------------------------------ missing cells: per-model cluster sums and sizes


def holey_design(seed, n_clusters, n_models=3):
    """``design`` with cells removed: model 1 loses every item of cluster 0 and a few items
    elsewhere, model 2 loses single items; model 0 stays complete."""
    x, cluster = design(seed, n_clusters, n_models)
    rng = np.random.default_rng(seed + 1000)
    x[cluster == 0, 1] = np.nan
    x[rng.random(x.shape[0]) < 0.15, 1] = np.nan
    x[rng.random(x.shape[0]) < 0.1, 2] = np.nan
    # keep at least one item of every cluster for models 0 and 2, two items of cluster 1+ for 1
    for g in range(n_clusters):
        rows = np.flatnonzero(cluster == g)
        x[rows[0], 2] = 1.0 if np.isnan(x[rows[0], 2]) else x[rows[0], 2]
        if g > 0:
            x[rows[:2], 1] = np.where(np.isnan(x[rows[:2], 1]), 0.0, x[rows[:2], 1])
    return x, cluster


def test_cluster_totals_per_model_skip_missing_cells():
    x, cluster = holey_design(3, 6)
    sums, sizes = cluster_totals(x, cluster, per_model=True)
    for g in range(6):
        for m in range(3):
            cell = [v for v, c in zip(x[:, m], cluster) if c == g and v == v]
            assert sizes[g, m] == len(cell) and sums[g, m] == sum(cell)
    assert sizes[0, 1] == 0
    with pytest.raises(ValueError, match="complete units"):
        cluster_totals(x, cluster)


@pytest.mark.parametrize("n_clusters", [5, 6, 7, 8])
@pytest.mark.parametrize("se_type", ["CR1", "CR2"])
def test_missing_cells_pvalues_equal_the_loop_based_wcr_on_each_models_own_items(
    n_clusters, se_type
):
    """With per-model sizes each model's p-value is the WCR of its own items and clusters: the
    loop code gets only that model's items (cluster 0 absent for model 1) and enumerates the
    sign vectors of its own clusters."""
    x, cluster = holey_design(40 + n_clusters, n_clusters)
    sums, sizes = cluster_totals(x, cluster, per_model=True)
    for mu in (0.45, 0.6):
        res = wild_cluster_means(sums, sizes, null=mu, se=se_type)
        assert res.enumerated and res.reps == 2**n_clusters
        assert res.model_clusters.tolist() == [n_clusters, n_clusters - 1, n_clusters]
        for m in range(3):
            keep = ~np.isnan(x[:, m])
            y, labels = x[keep, m].tolist(), cluster[keep].tolist()
            own = len(set(labels))
            signs = list(itertools.product([-1.0, 1.0], repeat=own))
            expected = reference_pvalue(y, labels, mu, signs, se_type)
            assert abs(res.pvalue[m] - expected) <= 1e-12, (m, mu)
            assert res.statistic[m] == pytest.approx(
                ols_constant_t(y, labels, mu, se_type), rel=1e-12
            )


def test_missing_cells_interval_bounds_are_where_the_loop_based_pvalue_crosses_alpha():
    x, cluster = holey_design(77, 8)
    sums, sizes = cluster_totals(x, cluster, per_model=True)
    res = wild_cluster_means(sums, sizes, alpha=0.1, se="CR2")
    for m in range(3):
        keep = ~np.isnan(x[:, m])
        y, labels = x[keep, m].tolist(), cluster[keep].tolist()
        signs = list(itertools.product([-1.0, 1.0], repeat=len(set(labels))))
        assert res.estimate[m] == pytest.approx(np.mean(y), rel=1e-12)
        assert_inverts(y, labels, res.lower[m], res.upper[m], res.se[m], signs, "CR2", 0.1)


def test_per_model_sizes_equal_to_common_sizes_give_the_same_answer():
    x, cluster = design(12, 7)
    sums, sizes = cluster_totals(x, cluster)
    common = wild_cluster_means(sums, sizes, null=0.5)
    tiled = wild_cluster_means(sums, np.repeat(sizes[:, None], 3, axis=1), null=0.5)
    np.testing.assert_allclose(tiled.lower, common.lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tiled.upper, common.upper, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(tiled.pvalue, common.pvalue)


def test_per_model_sizes_are_checked():
    sums = np.array([[1.0, 0.0], [2.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="sum of 0"):
        wild_cluster_means(sums, np.array([[1, 1], [3, 2], [0, 2]]))  # a sum without items
    with pytest.raises(ValueError, match="shape"):
        wild_cluster_means(sums, np.ones((3, 3)))
    with pytest.raises(ValueError, match="complete units"):
        wild_cluster_pairs(sums, np.array([[2, 1], [3, 2], [2, 2]]))
    one = wild_cluster_means(np.array([[1.0, 0.0], [2.0, 1.0]]), np.array([[2, 0], [3, 2]]))
    assert one.refused.tolist() == [False, True] and np.isnan(one.lower[1])


# ------------------------------------- score_intervals(method="cluster-wild") against the loop


def _scores(x, cluster):
    import rankci

    labels = [f"g{c:02d}" for c in cluster]  # sorted like the integer codes
    return rankci.Scores.from_matrix(x, models=["a", "b", "c"][: x.shape[1]], clusters=labels)


@pytest.mark.parametrize("n_clusters", [6, 7, 8])
def test_score_intervals_cluster_wild_is_the_inverted_loop_based_wcr(n_clusters):
    """The shipped interval: CR1 studentisation, all 2^G sign vectors (G <= 9 with reps=1000),
    bounds where the loop-based symmetric p-value crosses alpha."""
    import warnings

    from rankci.analyses.intervals import score_intervals

    x, cluster = design(200 + n_clusters, n_clusters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the few-clusters warning
        result = score_intervals(_scores(x, cluster), "cluster-wild", rng=3, verdict=False)
    assert result.method == "cluster-wild"
    assert result.options["enumerated"] and result.options["draws"] == 2**n_clusters
    assert result.options["studentization"] == "CR1"
    signs = list(itertools.product([-1.0, 1.0], repeat=n_clusters))
    for m, name in enumerate(result.models):
        y, labels = x[:, m].tolist(), cluster.tolist()
        j = list(result.models).index(name)
        t_at = ols_constant_t(y, labels, 0.0, "CR1")  # (mean - 0) / se_CR1
        assert result.se[j] == pytest.approx(np.mean(y) / t_at, rel=1e-12)
        assert_inverts(y, labels, result.lower[j], result.upper[j], result.se[j], signs)


def test_score_intervals_cluster_wild_random_draws_come_from_the_recorded_seed():
    """G = 12 > log2(reps): B = reps random sign vectors drawn from the seed, the observed
    statistic counted as one more draw; the same seed gives the same interval."""
    import warnings

    from rankci.analyses.intervals import score_intervals

    x, cluster = design(9, 12)
    scores = _scores(x, cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = score_intervals(scores, "cluster-wild", reps=300, rng=11, verdict=False)
        again = score_intervals(scores, "cluster-wild", reps=300, rng=11, verdict=False)
        other = score_intervals(scores, "cluster-wild", reps=300, rng=12, verdict=False)
    assert result.options["seed"] == 11 and result.options["reps"] == 300
    assert result.options["draws"] == 300 and not result.options["enumerated"]
    np.testing.assert_array_equal(result.lower, again.lower)
    np.testing.assert_array_equal(result.upper, again.upper)
    assert not np.array_equal(result.lower, other.lower)
    w, enumerated = wild_weights(12, reps=300, rng=11)  # the draws the seed stands for
    assert not enumerated
    for j in range(3):
        y, labels = x[:, j].tolist(), cluster.tolist()
        se = result.se[j]
        assert_inverts(y, labels, result.lower[j], result.upper[j], se, w, enumerated=False)


def test_score_intervals_cluster_wild_missing_cells_use_each_models_own_clusters():
    """missing='pairwise': each model's interval is the WCR of its own items; model b has no item
    of cluster 0, which is dropped for it and counted in options['dropped_clusters']."""
    import warnings

    from rankci.analyses.intervals import score_intervals

    x, cluster = holey_design(5, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = score_intervals(
            _scores(x, cluster), "cluster-wild", missing="pairwise", rng=1, verdict=False
        )
    assert result.options["dropped_clusters"] == {"b": 1}
    assert "dropped_clusters" in result.guarantee
    for j in range(3):
        keep = ~np.isnan(x[:, j])
        y, labels = x[keep, j].tolist(), cluster[keep].tolist()
        assert result.n[j] == keep.sum() and result.score[j] == pytest.approx(np.mean(y))
        signs = list(itertools.product([-1.0, 1.0], repeat=len(set(labels))))
        assert_inverts(y, labels, result.lower[j], result.upper[j], result.se[j], signs)


def test_chunked_draw_products_give_the_same_numbers(monkeypatch):
    """The B x G x M products are formed in chunks of models; the chunking changes nothing."""
    import rankci.evidence.wild_cluster as wc

    x, cluster = holey_design(8, 7)
    sums, sizes = cluster_totals(x, cluster, per_model=True)
    full = wild_cluster_means(sums, sizes, null=0.5, se="CR2")
    complete = wild_cluster_means(*cluster_totals(design(8, 7)[0], cluster), null=0.5)
    monkeypatch.setattr(wc, "CHUNK_CELLS", 1)  # one model per chunk
    for before, after in (
        (full, wild_cluster_means(sums, sizes, null=0.5, se="CR2")),
        (complete, wild_cluster_means(*cluster_totals(design(8, 7)[0], cluster), null=0.5)),
    ):
        for name in ("lower", "upper", "pvalue", "statistic"):
            np.testing.assert_array_equal(getattr(after, name), getattr(before, name))
