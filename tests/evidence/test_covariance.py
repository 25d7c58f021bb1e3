"""Covariance of the model means against R's sandwich::vcovCL (tests/fixtures/oracles)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import rankci
from rankci.analyses.intervals import means_covariance, score_intervals

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
DATASETS = ("small", "medium", "unbalanced")
FILES = {
    ("item", False): "means_cov_item_HC0.csv",
    ("cluster", False): "means_cov_cluster_HC0.csv",
    ("cluster", True): "means_cov_cluster_HC0_cadj.csv",
}


def _scores(name: str) -> rankci.Scores:
    return rankci.read_scores(ORACLES / f"{name}.csv.gz")


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("kind,small_sample", list(FILES))
def test_means_and_covariance_match_sandwich_vcovCL(name, kind, small_sample):
    oracle = pd.read_csv(ORACLES / name / FILES[(kind, small_sample)], index_col="model")
    result = means_covariance(
        _scores(name),
        covariance={"item": "independent", "cluster": "cluster"}[kind],
        small_sample=small_sample,
        missing="pairwise",
    )
    assert list(result.models) == list(oracle.index)
    expected = oracle[list(result.models)].to_numpy()
    np.testing.assert_allclose(result.mean, oracle["mean"].to_numpy(), rtol=1e-10, atol=1e-12)
    # 1e-8 relative to the largest entry, and entry by entry
    scale = np.abs(expected).max()
    assert np.abs(result.cov - expected).max() <= 1e-8 * scale
    np.testing.assert_allclose(result.cov, expected, rtol=1e-8, atol=1e-14)


def test_available_cases_counts_match_descriptives():
    descriptives = pd.read_csv(ORACLES / "unbalanced" / "descriptives.csv", index_col="model")
    result = means_covariance(_scores("unbalanced"), missing="pairwise")
    np.testing.assert_array_equal(result.n, descriptives.loc[list(result.models), "n"].to_numpy())
    assert result.missing == "pairwise"


@pytest.mark.parametrize("name", DATASETS)
def test_normal_standard_error_is_the_iid_se_of_the_descriptives(name):
    descriptives = pd.read_csv(ORACLES / name / "descriptives.csv", index_col="model")
    result = score_intervals(_scores(name), "normal", verdict=False, missing="pairwise")
    expected = descriptives.loc[list(result.models)]
    np.testing.assert_allclose(result.score, expected["mean"], rtol=1e-10)
    np.testing.assert_allclose(result.se, expected["se_iid"], rtol=1e-8)


@pytest.mark.parametrize("name", DATASETS)
# the 20-cluster oracle draws the few-clusters caution; the subject is the standard error
@pytest.mark.filterwarnings("ignore:.* clusters, the largest:rankci.RankciWarning")
def test_cluster_standard_error_is_the_root_of_the_oracle_diagonal(name):
    for small_sample in (False, True):
        oracle = pd.read_csv(ORACLES / name / FILES[("cluster", small_sample)], index_col="model")
        result = score_intervals(
            _scores(name), "cluster", small_sample=small_sample, verdict=False, missing="pairwise"
        )
        diag = np.diag(oracle[list(result.models)].to_numpy())
        np.testing.assert_allclose(result.se, np.sqrt(diag), rtol=1e-8)


def test_difference_se_is_millers_clustered_paired_se():
    oracle = pd.read_csv(ORACLES / "small" / FILES[("cluster", False)], index_col="model")
    sigma = oracle[list(oracle.index)].to_numpy()
    result = means_covariance(_scores("small"), covariance="cluster")
    se = result.difference_se()
    assert se[0, 1] == pytest.approx(np.sqrt(sigma[0, 0] + sigma[1, 1] - 2 * sigma[0, 1]))
    assert np.allclose(np.diag(se), 0)


def test_frame_and_dict_have_the_oracle_layout():
    result = means_covariance(_scores("small"), covariance="cluster")
    frame = result.to_frame()
    assert list(frame.columns[:3]) == ["model", "mean", "n"]
    assert list(frame.columns[3:]) == list(result.models)
    import json

    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["kind"] == "cluster" and payload["n_groups"] == 20
    assert "MeansCovariance(5 models" in repr(result)


def test_cluster_covariance_needs_a_cluster_column():
    x = np.array([[1, 0], [1, 1], [0, 0], [1, 0]], dtype=float)
    with pytest.raises(ValueError, match="cluster column"):
        means_covariance(rankci.Scores.from_matrix(x), covariance="cluster")
    with pytest.raises(ValueError, match="unknown covariance 'robust'"):
        means_covariance(rankci.Scores.from_matrix(x), covariance="robust")


def test_cluster_covariance_refuses_cluster_units():
    with pytest.raises(ValueError, match="item or observation units"):
        means_covariance(_scores("small"), covariance="cluster", unit="cluster")


# ---------------------------------------------------------------------- CR2 (Bell-McCaffrey)
def _cr2_brute_force(x: np.ndarray, cluster: np.ndarray) -> tuple[float, float]:
    """CR2 variance of a mean and its Satterthwaite df from the matrix definitions.

    Bell and McCaffrey (2002): V = sum_g (1_g' A_g e_g)^2 / n^2 with A_g = (I - H_gg)^{-1/2};
    df = (sum lambda)^2 / sum lambda^2, lambda the eigenvalues of G'G with
    G[:, g] = (I - H)[:, g] A_g 1_g / n (Imbens and Kolesar 2016, working model Omega = I).
    """
    from scipy import linalg

    n = x.size
    residual_maker = np.eye(n) - np.full((n, n), 1.0 / n)
    e = x - x.mean()
    total, columns = 0.0, []
    for g in np.unique(cluster):
        rows = np.flatnonzero(cluster == g)
        block = np.eye(rows.size) - np.full((rows.size, rows.size), 1.0 / n)
        adjust = np.real(linalg.inv(linalg.sqrtm(block)))
        total += (adjust @ e[rows]).sum() ** 2
        columns.append(residual_maker[:, rows] @ adjust @ np.ones(rows.size) / n)
    gram = np.column_stack(columns)
    gram = gram.T @ gram
    lam = np.linalg.eigvalsh(gram)
    return total / n**2, lam.sum() ** 2 / (lam**2).sum()


def test_cr2_variance_and_df_match_the_matrix_definition():
    from rankci.evidence.covariance import grouped_residuals

    rng = np.random.default_rng(3)
    sizes = np.array([2, 3, 5, 8, 13, 21, 34, 1, 4, 9])
    cluster = np.repeat(np.arange(sizes.size), sizes)
    x = rng.random((cluster.size, 2))
    grouped = grouped_residuals(x, cluster, "cr2")
    for j in range(2):
        variance, df = _cr2_brute_force(x[:, j], cluster)
        assert grouped.variance()[j] == pytest.approx(variance, rel=1e-10)
        assert grouped.df[j] == pytest.approx(df, rel=1e-10)


def test_cr2_with_missing_cells_uses_each_models_own_items():
    from rankci.evidence.covariance import grouped_residuals

    rng = np.random.default_rng(4)
    cluster = np.repeat(np.arange(8), [3, 4, 6, 2, 9, 5, 7, 4])
    x = rng.random((cluster.size, 2))
    x[[0, 5, 11, 12, 30], 1] = np.nan
    grouped = grouped_residuals(x, cluster, "cr2")
    keep = np.isfinite(x[:, 1])
    variance, df = _cr2_brute_force(x[keep, 1], cluster[keep])
    assert grouped.variance()[1] == pytest.approx(variance, rel=1e-10)
    assert grouped.df[1] == pytest.approx(df, rel=1e-10)


def test_cr2_without_clusters_is_the_usual_standard_error():
    from rankci.evidence.covariance import grouped_residuals

    x = np.random.default_rng(5).random((40, 3))
    grouped = grouped_residuals(x, None, "cr2")
    np.testing.assert_allclose(np.sqrt(grouped.variance()), stats.sem(x, axis=0), rtol=1e-12)
    np.testing.assert_allclose(grouped.df, 39, rtol=1e-12)


def test_small_sample_modes_are_checked():
    with pytest.raises(ValueError, match="unknown small_sample 'hc3'"):
        means_covariance(_scores("small"), covariance="cluster", small_sample="hc3")
    cr2 = means_covariance(_scores("small"), covariance="cluster", small_sample="cr2")
    # balanced clusters: CR2 = HC0 / (1 - 1/G) = HC0 G/(G-1), with G - 1 df
    hc0 = means_covariance(_scores("small"), covariance="cluster")
    np.testing.assert_allclose(cr2.cov, hc0.cov * 20 / 19, rtol=1e-12)
    np.testing.assert_allclose(cr2.df, 19, rtol=1e-10)


def test_observation_units_are_clustered_by_their_items_cluster():
    """With prompt variants, observation units (item, prompt) keep their item's cluster."""
    rng = np.random.default_rng(8)
    rows = []
    for c in range(6):
        for i in range(4):
            for p in ("p1", "p2"):
                for m in ("a", "b"):
                    rows.append(
                        {
                            "model": m,
                            "item": f"c{c}i{i}",
                            "prompt": p,
                            "cluster": f"c{c}",
                            "score": float(rng.random() < 0.6),
                        }
                    )
    table = pd.DataFrame(rows).iloc[1:]  # one missing observation for model b
    scores = rankci.read_scores(table)
    for missing in ("pairwise", "complete"):
        result = means_covariance(scores, covariance="cluster", unit="observation", missing=missing)
        used = table
        if missing == "complete":
            counts = table.groupby(["item", "prompt"])["model"].transform("size")
            used = table[counts == 2]
        for j, model in enumerate(result.models):
            x = used[used["model"] == model]
            e = x["score"] - x["score"].mean()
            sums = e.groupby(x["cluster"]).sum()
            assert result.cov[j, j] == pytest.approx((sums**2).sum() / len(x) ** 2, rel=1e-12)
