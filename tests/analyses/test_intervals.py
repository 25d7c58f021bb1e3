"""Score intervals against scipy (normal, percentile and BCa bootstrap) and direct resampling."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import rankci
from rankci import RankciWarning
from rankci.analyses.intervals import ScoreIntervals, interval_arrays, score_intervals
from rankci.evidence import bootstrap as boot

# the oracle fixtures have 20-30 clusters: rankci's few-clusters cautions are right there, and
# their own tests are in test_few_clusters.py; here the subject is the interval arithmetic
pytestmark = [
    pytest.mark.filterwarnings("ignore:.* clusters, the largest:rankci.RankciWarning"),
    pytest.mark.filterwarnings(
        "ignore:the cluster bootstrap with only .* clusters tends:rankci.RankciWarning"
    ),
]

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"


@pytest.fixture(scope="module")
def small():
    return rankci.read_scores(ORACLES / "small.csv.gz")


@pytest.fixture(scope="module")
def unbalanced():
    return rankci.read_scores(ORACLES / "unbalanced.csv.gz")


def _columns(scores: rankci.Scores) -> dict:
    """Each model's available item scores, straight from the long table."""
    frame = scores.to_frame()
    return {
        m: g.sort_values("item")["score"].to_numpy()
        for m, g in frame.groupby("model", observed=True)
    }


def _skewed(n=40, seed=11) -> rankci.Scores:
    """Continuous, skewed scores in [0, 1] where BCa and percentile intervals differ."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.beta(0.15, 2.5, n), rng.beta(0.3, 3.0, n), rng.beta(2, 2, n)])
    return rankci.Scores.from_matrix(x)


# ---------------------------------------------------------------------- normal
def test_normal_interval_is_scipys_normal_interval_around_the_sem(unbalanced):
    result = score_intervals(unbalanced, "normal", alpha=0.1, verdict=False, missing="pairwise")
    for j, model in enumerate(result.models):
        x = _columns(unbalanced)[model]
        lo, hi = stats.norm.interval(0.9, loc=x.mean(), scale=stats.sem(x))
        assert result.lower[j] == pytest.approx(lo, rel=1e-10)
        assert result.upper[j] == pytest.approx(hi, rel=1e-10)
        assert result.n[j] == x.size


def test_small_sample_cluster_interval_uses_t_with_G_minus_1_df(small):
    oracle = pd.read_csv(ORACLES / "small" / "means_cov_cluster_HC0_cadj.csv", index_col="model")
    result = score_intervals(small, "cluster", small_sample=True, verdict=False)
    se = np.sqrt(np.diag(oracle[list(result.models)].to_numpy()))
    half = stats.t.ppf(0.975, df=19) * se
    np.testing.assert_allclose(result.upper - result.score, half, rtol=1e-10)
    np.testing.assert_allclose(result.score - result.lower, half, rtol=1e-10)
    plain = score_intervals(small, "cluster", small_sample=False, verdict=False)
    oracle0 = pd.read_csv(ORACLES / "small" / "means_cov_cluster_HC0.csv", index_col="model")
    se0 = np.sqrt(np.diag(oracle0[list(result.models)].to_numpy()))
    np.testing.assert_allclose(plain.upper - plain.score, stats.norm.ppf(0.975) * se0, rtol=1e-10)


# ---------------------------------------------------------------------- bootstrap vs scipy
def _mc_tolerance(se: np.ndarray, reps: int, p: float) -> np.ndarray:
    """4 Monte-Carlo SDs of the difference of two independent quantile estimates at level p."""
    density = stats.norm.pdf(stats.norm.ppf(p)) / se
    return 4 * np.sqrt(2) * np.sqrt(p * (1 - p) / reps) / density


@pytest.mark.parametrize("method", ["bootstrap", "bca"])
def test_bootstrap_intervals_agree_with_scipy_within_monte_carlo_error(small, method):
    reps = 5000
    result = score_intervals(small, method, reps=reps, rng=1, verdict=False)
    columns = _columns(small)
    for j, model in enumerate(result.models):
        ref = stats.bootstrap(
            (columns[model],),
            np.mean,
            n_resamples=reps,
            method="BCa" if method == "bca" else "percentile",
            rng=np.random.default_rng(100 + j),
        )
        tol = _mc_tolerance(ref.standard_error, reps, 0.025)
        assert abs(result.lower[j] - ref.confidence_interval.low) < tol, model
        assert abs(result.upper[j] - ref.confidence_interval.high) < tol, model
        assert result.se[j] == pytest.approx(ref.standard_error, rel=0.06)


@pytest.mark.parametrize("method", ["bootstrap", "bca"])
def test_skewed_scores_match_scipy_and_tell_the_methods_apart(method):
    """On skewed scores the percentile, BCa and normal intervals differ by more than the
    Monte-Carlo error, and each resampling method still matches scipy's."""
    scores = _skewed()
    reps = 20000
    result = score_intervals(scores, method, reps=reps, rng=5, verdict=False)
    other = score_intervals(
        scores, "bca" if method == "bootstrap" else "bootstrap", reps=reps, rng=5, verdict=False
    )
    normal = score_intervals(scores, "normal", verdict=False)
    x = scores.units().values
    for j in range(2):  # the two skewed columns
        ref = stats.bootstrap(
            (x[:, j],),
            np.mean,
            n_resamples=reps,
            method="BCa" if method == "bca" else "percentile",
            rng=np.random.default_rng(7 + j),
        )
        tol = _mc_tolerance(ref.standard_error, reps, 0.025)
        assert abs(result.lower[j] - ref.confidence_interval.low) < tol
        assert abs(result.upper[j] - ref.confidence_interval.high) < tol
        assert abs(result.upper[j] - other.upper[j]) > tol  # BCa shifts right-skewed bounds up
    tol0 = _mc_tolerance(result.se[0], reps, 0.025)
    assert abs(result.lower[0] - normal.lower[0]) > tol0


def test_closed_form_acceleration_equals_the_brute_force_jackknife():
    x = _skewed().units().values
    accel = boot.jackknife_acceleration(x)
    for j in range(x.shape[1]):
        leave_one_out = np.array([np.delete(x[:, j], i).mean() for i in range(x.shape[0])])
        u = leave_one_out.mean() - leave_one_out
        assert accel[j] == pytest.approx((u**3).sum() / (6 * ((u**2).sum()) ** 1.5), rel=1e-9)


def test_acceleration_with_missing_cells_uses_each_columns_own_units():
    x = _skewed().units().values.copy()
    x[:7, 0] = np.nan
    accel = boot.jackknife_acceleration(x)
    assert accel[0] == pytest.approx(boot.jackknife_acceleration(x[7:, :1])[0], rel=1e-12)


# ---------------------------------------------------------------------- the weights matrix
def test_bootstrap_means_equal_explicit_resamples_with_the_same_draws():
    rng = np.random.default_rng(3)
    x = rng.random((50, 4))
    x[rng.random(x.shape) < 0.2] = np.nan
    draws = np.random.default_rng(42).integers(0, 50, size=(30, 50))
    got = boot.bootstrap_means(x, 30, np.random.default_rng(42))
    expected = np.array([np.nanmean(x[idx], axis=0) for idx in draws])
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_cluster_bootstrap_means_equal_explicit_cluster_resamples():
    rng = np.random.default_rng(4)
    cluster = np.repeat(np.arange(6), [3, 9, 1, 5, 7, 2])
    x = rng.random((cluster.size, 3))
    x[rng.random(x.shape) < 0.15] = np.nan
    draws = np.random.default_rng(9).integers(0, 6, size=(25, 6))
    got = boot.cluster_bootstrap_means(x, cluster, 6, 25, np.random.default_rng(9))
    expected = []
    for picked in draws:
        rows = np.concatenate([np.flatnonzero(cluster == c) for c in picked])
        expected.append(np.nanmean(x[rows], axis=0))
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-12)


def test_column_quantiles_match_numpy_linear_quantiles():
    draws = np.random.default_rng(0).normal(size=(999, 5))
    probs = np.array([[0.01, 0.3, 0.5, 0.975, 1.0], [0.0, 0.025, 0.7, 0.2, 0.99]])
    got = boot.column_quantiles(draws, probs)
    for k in range(2):
        for j in range(5):
            assert got[k, j] == pytest.approx(np.quantile(draws[:, j], probs[k, j]), rel=1e-12)


def test_chunked_resampling_gives_the_full_distribution(monkeypatch):
    monkeypatch.setattr(boot, "_CHUNK_CELLS", 7 * 40)  # 7 resamples per chunk
    x = np.random.default_rng(1).random((40, 3))
    draws = boot.bootstrap_means(x, 20, np.random.default_rng(2))
    assert draws.shape == (20, 3) and np.isfinite(draws).all()
    assert len({tuple(row) for row in draws.round(12)}) == 20


# ---------------------------------------------------------------------- the result
def test_same_seed_same_answer_and_the_seed_matters(small):
    a = score_intervals(small, "bootstrap", rng=7, verdict=False)
    b = score_intervals(small, "bootstrap", rng=7, verdict=False)
    c = score_intervals(small, "bootstrap", rng=8, verdict=False)
    np.testing.assert_array_equal(a.lower, b.lower)
    assert not np.array_equal(a.lower, c.lower)
    generator = np.random.default_rng(7)
    d = score_intervals(small, "bootstrap", rng=generator, verdict=False)
    np.testing.assert_array_equal(a.lower, d.lower)


def test_overlap_flags_follow_the_sources_rule(unbalanced):
    result = score_intervals(unbalanced, "normal", missing="pairwise")
    names = list(result.models)
    flagged = {frozenset(p) for p in result.indistinguishable()}
    for j in range(len(names)):
        for l in range(j + 1, len(names)):
            hi, lo = (j, l) if result.score[j] >= result.score[l] else (l, j)
            overlaps = result.lower[hi] <= result.upper[lo]
            assert (frozenset((names[j], names[l])) in flagged) == overlaps
    for a, b in result.indistinguishable():
        assert result.score[names.index(a)] >= result.score[names.index(b)]


def test_paired_verdict_is_scipy_paired_t_with_statsmodels_holm(small):
    from statsmodels.stats.multitest import multipletests

    result = score_intervals(small, "normal", alpha=0.05)
    x = small.units().values
    m = x.shape[1]
    pairs = [(j, l) for j in range(m) for l in range(m) if j != l]
    p = [stats.ttest_rel(x[:, j], x[:, l], alternative="greater").pvalue for j, l in pairs]
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    names = result.models
    expected = {(names[j], names[l]) for (j, l), r in zip(pairs, reject, strict=True) if r}
    assert set(result.separated_pairs()) == expected
    assert len(expected) > 0


def test_clustered_verdict_is_millers_z_from_the_oracle_covariance(small):
    from statsmodels.stats.multitest import multipletests

    oracle = pd.read_csv(ORACLES / "small" / "means_cov_cluster_HC0.csv", index_col="model")
    sigma, mean = oracle[list(oracle.index)].to_numpy(), oracle["mean"].to_numpy()
    m = len(mean)
    pairs = [(j, l) for j in range(m) for l in range(m) if j != l]
    z = [
        (mean[j] - mean[l]) / np.sqrt(sigma[j, j] + sigma[l, l] - 2 * sigma[j, l]) for j, l in pairs
    ]
    reject = multipletests(special.ndtr(-np.array(z)), alpha=0.05, method="holm")[0]
    names = list(oracle.index)
    expected = {(names[j], names[l]) for (j, l), r in zip(pairs, reject, strict=True) if r}
    result = score_intervals(small, "cluster", alpha=0.05, small_sample=False)
    assert set(result.separated_pairs()) == expected
    assert result.verdict.test == "clustered-z"


def test_overlap_is_more_conservative_than_the_paired_verdict(small):
    result = score_intervals(small, "normal")
    overlap_separates = len(result.pairs_frame()) - len(result.indistinguishable())
    assert overlap_separates < len(result.separated_pairs())
    frame = result.pairs_frame()
    assert {"first", "second", "difference", "overlap", "paired_pvalue", "paired_verdict"} <= set(
        frame.columns
    )


def test_to_dict_follows_the_issue_schema_and_is_json_safe(unbalanced):
    result = score_intervals(
        unbalanced, "cluster-bootstrap", reps=200, rng=1, missing="pairwise", small_sample=False
    )
    payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert payload["method"] == "cluster-bootstrap" and payload["alpha"] == 0.05
    assert set(payload["models"][0]) >= {"model", "score", "lower", "upper", "se"}
    overlap = payload["indistinguishable"]  # the compact runs of docs/json.md
    assert overlap["form"] == "runs" and len(overlap["below"]) == len(payload["models"])
    assert overlap["n_pairs"] == len(result.indistinguishable())
    pairs = json.loads(json.dumps(result.to_dict(pairs=True)))["indistinguishable"]
    assert pairs == [list(p) for p in result.indistinguishable()]
    assert payload["options"] == {"reps": 200, "seed": 1, "n_clusters": 30, "small_sample": "none"}
    assert "separated" in payload["paired"]
    assert repr(result).startswith("ScoreIntervals(8 models, method='cluster-bootstrap'")
    assert isinstance(result, ScoreIntervals)


def test_a_model_with_one_unit_gets_no_interval():
    x = np.array([[1, 0, 1], [0, np.nan, 1], [1, np.nan, 0], [1, np.nan, 1]], dtype=float)
    result = score_intervals(rankci.Scores.from_matrix(x), "normal")
    assert np.isnan(result.lower[1]) and result.n[1] == 1
    assert result.overlap[1].sum() == 2  # undefined intervals are never called distinguishable


def test_constant_scores_give_a_point_interval_for_every_method():
    x = np.column_stack([np.ones(30), np.r_[np.ones(15), np.zeros(15)]])
    for method in ("normal", "bootstrap", "bca"):
        # a zero-width interval is never given silently: rankci says why
        with pytest.warns(RankciWarning, match=f"1 zero-width {method} interval.*all 30 scores"):
            result = score_intervals(
                rankci.Scores.from_matrix(x), method, reps=100, rng=1, verdict=False
            )
        assert result.lower[0] == result.upper[0] == 1.0, method


def test_bad_options_are_clear_errors(small):
    with pytest.raises(ValueError, match="unknown method 'wald'"):
        score_intervals(small, "wald")
    with pytest.raises(ValueError, match="reps must be an integer >= 2"):
        score_intervals(small, reps=1)
    with pytest.raises(ValueError, match="alpha"):
        score_intervals(small, alpha=1.5)
    x = np.array([[1, 0], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match="cluster column"):
        score_intervals(rankci.Scores.from_matrix(x), "cluster-bootstrap")


def test_interval_arrays_handle_a_stacked_matrix():
    x = np.random.default_rng(0).random((100, 6))
    out = interval_arrays(x, "normal", 0.05)
    assert out["score"].shape == (6,) and (out["lower"] < out["upper"]).all()


def test_small_sample_clustered_verdict_uses_t_on_G_minus_1_df(small):
    from statsmodels.stats.multitest import multipletests

    oracle = pd.read_csv(ORACLES / "small" / "means_cov_cluster_HC0_cadj.csv", index_col="model")
    sigma, mean = oracle[list(oracle.index)].to_numpy(), oracle["mean"].to_numpy()
    m = len(mean)
    pairs = [(j, l) for j in range(m) for l in range(m) if j != l]
    t = np.array(
        [
            (mean[j] - mean[l]) / np.sqrt(sigma[j, j] + sigma[l, l] - 2 * sigma[j, l])
            for j, l in pairs
        ]
    )
    p = stats.t.sf(t, df=19)
    result = score_intervals(small, "cluster", small_sample=True)
    got = np.array([result.verdict.pvalue[j, l] for j, l in pairs])
    np.testing.assert_allclose(got, p, rtol=1e-9)
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    names = list(oracle.index)
    expected = {(names[j], names[l]) for (j, l), r in zip(pairs, reject, strict=True) if r}
    assert set(result.separated_pairs()) == expected
    assert result.verdict_procedure["description"].startswith("clustered paired t")


def test_common_quantile_levels_with_missing_draws_ignore_the_nans():
    draws = np.random.default_rng(1).normal(size=(500, 3))
    draws[:40, 1] = np.nan
    got = boot.column_quantiles(draws, np.array([0.025, 0.975]))
    for j in range(3):
        column = draws[:, j][np.isfinite(draws[:, j])]
        np.testing.assert_allclose(got[:, j], np.quantile(column, [0.025, 0.975]), rtol=1e-12)


@pytest.mark.parametrize("method", ["cluster", "cluster-bootstrap"])
def test_equal_cluster_means_give_no_zero_width_interval(method):
    # six clusters of 40 items, model a correct on 20 in each: its cluster means are equal.
    # (Six, not two as before: with 5 clusters or fewer every cluster interval is now refused,
    # issue 25 item 2, test_few_clusters.py; the zero-width rule matters above that.)
    a = np.tile([1.0, 0.0], 120)
    b = np.concatenate([np.r_[np.ones(k), np.zeros(40 - k)] for k in (30, 10, 20, 25, 15, 35)])
    clusters = np.repeat([f"c{g}" for g in range(6)], 40)
    scores = rankci.Scores.from_matrix(np.c_[a, b], clusters=clusters)
    with pytest.warns(RankciWarning, match="zero width"):
        result = score_intervals(scores, method, reps=200, rng=0, verdict=False)
    assert np.isnan(result.lower[0]) and np.isnan(result.upper[0])
    assert result.upper[1] > result.lower[1]  # model b's cluster means differ: an interval
