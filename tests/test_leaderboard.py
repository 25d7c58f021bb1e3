"""The one-call API: units, per-cluster rankings and the non-informative-cluster filter."""

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.simulate import simulate_scores


@pytest.fixture(scope="module")
def clustered():
    return simulate_scores(
        np.linspace(1.0, -1.0, 6),
        600,
        n_clusters=12,
        n_prompts=2,
        sigma_cluster=0.5,
        sigma_model_cluster=0.3,
        rng=3,
    ).scores


@pytest.mark.parametrize("unit", ["observation", "item", "cluster", "prompt"])
# the two-prompt unit cannot certify: the subject is the equality of the two pipelines
@pytest.mark.filterwarnings(
    "ignore:with 2 prompt units the smallest attainable:rankci.RankciWarning"
)
def test_rank_equals_the_explicit_pipeline(clustered, unit):
    r = rankci.rank(clustered, unit=unit)
    pw = rankci.pairwise_tests(clustered.units(unit), "t")
    explicit = rankci.certify_holm(pw, 0.05, "simultaneous").ranking()
    np.testing.assert_array_equal(r.lower, explicit.lower)
    np.testing.assert_array_equal(r.upper, explicit.upper)
    assert r.n_units == {"observation": 1200, "item": 600, "cluster": 12, "prompt": 2}[unit]


def test_broader_units_give_wider_intervals(clustered):
    narrow = rankci.rank(clustered, unit="observation")
    broad = rankci.rank(clustered, unit="cluster")
    assert (broad.upper - broad.lower).sum() >= (narrow.upper - narrow.lower).sum()


def test_per_cluster_rankings_use_only_that_clusters_items(clustered):
    result = rankci.rank_by_cluster(clustered, unit="item", coverage="marginal")
    assert set(result.rankings) == set(clustered.clusters)
    frame = clustered.to_frame()
    c = clustered.clusters[3]
    expected = frame[frame.cluster == c].groupby("model", observed=True).score.mean()
    got = result.rankings[c]
    np.testing.assert_allclose(got.score, expected.loc[list(got.models)].to_numpy())
    long = result.to_frame()
    assert len(long) == 12 * 6 and list(long.columns[:2]) == ["cluster", "model"]
    assert "12 clusters ranked" in repr(result)


# the flat clusters certify nothing by design: that is what the filtering drops
@pytest.mark.filterwarnings("ignore:cluster 'flat.'. nothing is certified:rankci.RankciWarning")
def test_filtering_drops_clusters_where_models_are_indistinguishable():
    # 10 informative clusters (large gaps) and 4 where every model has the same ability
    rng = np.random.default_rng(0)
    informative = simulate_scores([3.0, 1.5, 0.0, -1.5, -3.0], 1000, n_clusters=4, rng=rng).matrix
    flat = simulate_scores([0.0] * 5, 200, n_clusters=4, rng=rng).matrix
    clusters = [f"good{k // 250}" for k in range(1000)] + [f"flat{k // 50}" for k in range(200)]
    scores = rankci.Scores.from_matrix(np.vstack([informative, flat]), clusters=clusters)
    r = rankci.rank(scores, unit="item", filter_uninformative=True)
    dropped = r.details["filter"]["dropped"]
    assert set(dropped) == {f"flat{k}" for k in range(4)}
    assert all("reaching rank 3" in reason for reason in dropped.values())
    assert r.details["filter"]["alpha_filter"] == pytest.approx(0.015)
    assert r.alpha == pytest.approx(0.035)
    assert r.excluded["clusters_dropped"] == 4 and r.n_units == 1000
    assert "screened" in r.guarantee


def test_filter_and_cluster_errors():
    scores = rankci.Scores.from_matrix(np.random.default_rng(0).random((20, 3)))
    with pytest.raises(ValueError, match="need a cluster column"):
        rankci.rank_by_cluster(scores)
    clustered = rankci.Scores.from_matrix(
        np.random.default_rng(0).random((20, 3)), clusters=["a"] * 10 + ["b"] * 10
    )
    with pytest.raises(ValueError, match="alpha_split"):
        rankci.rank(clustered, filter_uninformative=True, alpha_split=(0.5, 0.6))
    with pytest.raises(ValueError, match="within each cluster, where one cluster cannot be the"):
        rankci.rank_by_cluster(clustered, unit="cluster")
    with pytest.raises(ValueError, match="unknown coverage"):
        rankci.rank(clustered, coverage="joint")
    with pytest.raises(ValueError, match="alpha must be"):
        rankci.rank(clustered, alpha=1.5)


# clusters of 10-20 items: the subject is who is left out where, not what is certified
@pytest.mark.filterwarnings("ignore:cluster '.'. .* item units of continuous:rankci.RankciWarning")
@pytest.mark.filterwarnings("ignore:cluster '.'. nothing is certified:rankci.RankciWarning")
def test_a_model_absent_from_a_cluster_is_left_out_there_and_reported():
    x = np.random.default_rng(1).random((40, 3))
    x[20:, 0] = np.nan  # model m0 has no score in cluster b
    x[30:, 1] = np.nan  # model m1 misses half of cluster b
    clustered = rankci.Scores.from_matrix(x, clusters=["a"] * 20 + ["b"] * 20)
    result = rankci.rank_by_cluster(clustered, missing="complete")
    assert result.rankings["a"].models == ("m0", "m1", "m2")
    b = result.rankings["b"]
    assert b.models == ("m1", "m2") and b.excluded["models_without_scores"] == ["m0"]
    assert b.n_units == 10 and b.excluded["observations_excluded"] == 10
    x[20:, 1] = np.nan
    result = rankci.rank_by_cluster(rankci.Scores.from_matrix(x, clusters=["a"] * 20 + ["b"] * 20))
    assert "fewer than two models" in result.skipped["b"]


# a two-item board: the subject is the accepted inputs, not what two items certify
@pytest.mark.filterwarnings("ignore:with 2 item units the smallest attainable:rankci.RankciWarning")
def test_rank_accepts_frames_and_paths(tmp_path):
    frame = pd.DataFrame({"model": list("aabb"), "item": list("xyxy"), "score": [1, 1, 0, 1]})
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert rankci.rank(frame).n_models == 2
    assert rankci.rank(tmp_path / "s.csv").n_models == 2
    with pytest.raises(ValueError, match="expected Scores"):
        rankci.rank([1, 2, 3])
