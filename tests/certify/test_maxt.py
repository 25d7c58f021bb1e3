"""Max-t step-down: fast path vs the literal definition, resampling laws, guarantees, API."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import rankci
from rankci import Scores, UnitScores
from rankci.certify.maxt import bootstrap_draws, certify_maxt, gaussian_draws, maxt_ranking_from_cov
from rankci.cli import main
from rankci.evidence.covariance import unit_clusters, units_covariance

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"


def literal_stepdown(stat, null_stat, alpha, stepdown=True):
    """Romano-Wolf step-down read off its definition: hypotheses h, null draws null_stat[:, h]."""
    remaining = np.isfinite(stat)
    rejected = np.zeros(stat.size, dtype=bool)
    crits = []
    while remaining.any():
        maxima = null_stat[:, remaining].max(axis=1)
        k = int(np.ceil((1 - alpha) * (maxima.size + 1)))
        crit = max(0.0, float(np.sort(maxima)[k - 1]))
        crits.append(crit)
        new = remaining & (stat > crit)
        if not new.any():
            break
        rejected |= new
        remaining &= ~new
        if not stepdown:
            break
    return rejected, crits


def random_problem(seed, m=7):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, m))
    cov = (a @ a.T + np.eye(m)) * 1e-4
    mean = np.sort(rng.normal(0.5, 0.03, m))
    mean[1] = mean[0]  # an exact tie
    cov[:, 2], cov[2, :] = cov[:, 3], cov[3, :]  # models 2 and 3 identical: s_23 = 0
    cov[2, 2] = cov[3, 3]
    mean[2] = mean[3]
    return mean, cov


# random small boards: the subject is the equality of the two procedures, not what they certify
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("delta", [0.0, 0.01])
@pytest.mark.parametrize("stepdown", [True, False])
def test_fast_stepdown_equals_the_literal_procedure(seed, delta, stepdown):
    mean, cov = random_problem(seed)
    m = mean.size
    draws = gaussian_draws(cov, 4000, rng=seed)
    j, l = np.nonzero(~np.eye(m, dtype=bool))
    sd = np.sqrt(np.maximum(cov[j, j] + cov[l, l] - 2 * cov[j, l], 0))
    zero = sd < 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(
            zero,
            np.where(mean[j] - mean[l] - delta > 0, np.inf, 0.0),
            (mean[j] - mean[l] - delta) / sd,
        )
        null_stat = np.where(zero, 0.0, (draws[:, j] - draws[:, l]) / sd)
    rejected, crits = literal_stepdown(stat, null_stat, 0.05, stepdown)
    ranking = maxt_ranking_from_cov(mean, cov, delta=delta, stepdown=stepdown, draws=4000, rng=seed)
    want = np.zeros((m, m), dtype=bool)
    want[j[rejected], l[rejected]] = True
    closure = rankci.ranking.transitive_closure(want)
    np.testing.assert_array_equal(ranking.dominance, closure)
    np.testing.assert_allclose(ranking.details["critical_values"][: len(crits)], crits)


def test_marginal_family_equals_the_literal_procedure():
    mean, cov = random_problem(11)
    m = mean.size
    draws = gaussian_draws(cov, 3000, rng=5)
    ranking = maxt_ranking_from_cov(mean, cov, coverage="marginal", draws=3000, rng=5)
    assert ranking.dominance is None and ranking.tier is None
    for k in range(m):
        others = np.delete(np.arange(m), k)
        j = np.r_[np.full(m - 1, k), others]
        l = np.r_[others, np.full(m - 1, k)]
        sd = np.sqrt(np.maximum(cov[j, j] + cov[l, l] - 2 * cov[j, l], 0))
        zero = sd < 1e-9
        with np.errstate(divide="ignore", invalid="ignore"):
            stat = np.where(
                zero, np.where(mean[j] > mean[l], np.inf, 0.0), (mean[j] - mean[l]) / sd
            )
            null_stat = np.where(zero, 0.0, (draws[:, j] - draws[:, l]) / sd)
        rejected, _ = literal_stepdown(stat, null_stat, 0.05)
        assert ranking.upper[k] == m - rejected[: m - 1].sum()
        assert ranking.lower[k] == 1 + rejected[m - 1 :].sum()


def test_max_t_certifies_everything_holm_z_certifies():
    """Each max-t critical value is below Bonferroni's z_{1 - alpha/K} (union bound), so with
    statistics at least as large (HC0 Wald: sqrt(n / (n - 1)) times the paired z) the step-down
    rejects a superset of Holm's rejections."""
    scores = rankci.read_scores(ORACLES / "medium.csv.gz")
    holm = rankci.rank(scores, test="z")
    maxt = rankci.rank(scores, multiplicity="max-t", draws=20_000, rng=3, small_sample=False)
    assert (maxt.dominance | ~holm.dominance).all()
    assert maxt.dominance.sum() > holm.dominance.sum()
    first = maxt.details["critical_values"][0]
    assert first < stats.norm.isf(0.05 / (12 * 11))


def test_critical_value_is_the_exact_monte_carlo_order_statistic():
    from rankci.certify.maxt import critical_value

    assert critical_value(np.arange(1.0, 20.0), 0.05) == 19.0  # k = ceil(0.95 * 20) = 19
    assert critical_value(np.arange(1.0, 19.0), 0.05) == np.inf  # k = 19 > B = 18
    assert critical_value(np.arange(1000.0)[::-1], 0.05) == 950.0  # k = 951 of 0..999


def test_gaussian_draws_have_the_covariance_even_when_singular():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 3))
    cov = a @ a.T  # rank 3
    draws = gaussian_draws(cov, 200_000, rng=1)
    np.testing.assert_allclose(np.cov(draws, rowvar=False), cov, atol=0.03 * np.abs(cov).max())


def test_bootstrap_draws_have_the_sandwich_covariance():
    """Resampling items gives E[(xbar* - xbar)(xbar* - xbar)'] = HC0 Sigma exactly; resampling
    the 20 equal clusters of 'small' gives the cluster HC0 Sigma."""
    scores = rankci.read_scores(ORACLES / "small.csv.gz")
    units = scores.units("item")
    groups = unit_clusters(scores, units)
    for g in (None, groups):
        draws, empty = bootstrap_draws(units, g, 40_000, rng=2)
        assert empty == 0
        target = units_covariance(units, g).cov
        assert np.abs(draws.mean(axis=0)).max() < 5 * np.sqrt(np.diag(target).max() / 40_000)
        second_moment = draws.T @ draws / draws.shape[0]
        np.testing.assert_allclose(second_moment, target, atol=0.04 * np.diag(target).max())


# the complete null: most replications rightly certify nothing, and rankci says so each time
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
@pytest.mark.filterwarnings("ignore:max-t with only:rankci.RankciWarning")
def test_complete_null_family_wise_error_is_near_alpha():
    """Ten tied models on 30 items: any certified dominance is an error. Fast version of the
    validation study; the plain Wald max-t (small_sample=False) errs in about 11 % here."""
    rng = np.random.default_rng(12)
    n, m, reps = 30, 10, 300
    models, labels = tuple(f"m{k}" for k in range(m)), tuple(map(str, range(n)))
    errors = {"gaussian": 0, "bootstrap": 0}
    for _ in range(reps):
        item = rng.normal(0, 1.0, n)[:, None]
        x = (rng.random((n, m)) < 1 / (1 + np.exp(-(0.4 + item)))).astype(float)
        units = UnitScores(x, models, labels, "item", "complete", {}, True)
        for resampling in errors:
            ranking = certify_maxt(units, resampling=resampling, draws=500, rng=rng).ranking()
            errors[resampling] += bool(ranking.dominance.any())
    for count in errors.values():
        # 300 replicates -> SE 0.0126 at 0.05
        assert count / reps < 0.05 + 2.5 * 0.0126


def test_restricted_statistics_are_mcnemar_for_binary_scores():
    """T~ = (b - c) / sqrt(b + c) for 0/1 scores: McNemar's z, from scipy's binomial counts."""
    rng = np.random.default_rng(8)
    x = (rng.random((80, 4)) < [0.3, 0.5, 0.55, 0.8]).astype(float)
    units = Scores.from_matrix(x).units()
    est = units_covariance(units, small_sample=True)
    stat, _ = rankci.certify.maxt._pair_statistics(est.mean, est.cov, 0.0, est.n_groups)
    for j in range(4):
        for l in range(4):
            if j != l:
                b = np.sum((x[:, j] == 1) & (x[:, l] == 0))
                c = np.sum((x[:, j] == 0) & (x[:, l] == 1))
                assert stat[j, l] == pytest.approx((b - c) / np.sqrt(b + c), rel=1e-10)


@pytest.mark.filterwarnings("ignore:max-t with only:rankci.RankciWarning")
def test_bootstrap_with_a_model_missing_from_a_resample_is_conservative():
    """A resample without any item of a model counts as exceeding every critical value."""
    x = np.full((30, 3), np.nan)
    x[:, 0] = 1.0
    x[:, 1] = 0.0  # models 0 and 1 differ without error: T_01 = +inf
    x[:4, 2] = [0.0, 1.0, 0.0, 1.0]  # model 2 has 4 items: P(none resampled) = (26/30)^30 = 0.014
    units = Scores.from_matrix(x).units(missing="pairwise")
    ranking = certify_maxt(units, resampling="bootstrap", draws=2000, rng=1).ranking()
    assert 0 < ranking.details["bootstrap_empty_cells"] < 0.05 * 2000
    assert ranking.dominance[0, 1]
    x[1:4, 2] = np.nan  # one item: (29/30)^30 = 0.36 of the resamples lack it, so c = +inf
    units = Scores.from_matrix(x).units(missing="pairwise")
    with pytest.warns(rankci.RankciWarning, match="nothing is certified.* does not pass inf"):
        ranking = certify_maxt(units, resampling="bootstrap", draws=2000, rng=1).ranking()
    assert ranking.details["critical_values"] == [np.inf]
    assert not ranking.dominance.any()


# ---------------------------------------------------------------------- API and CLI
@pytest.mark.filterwarnings("ignore:max-t with only:rankci.RankciWarning")
def test_rank_with_max_t_is_reproducible_and_json_safe():
    scores = rankci.read_scores(ORACLES / "unbalanced.csv.gz")
    a = rankci.rank(
        scores,
        multiplicity="max-t",
        missing="pairwise",
        rng=4,
        resampling="bootstrap",
        covariance="cluster",
    )
    b = rankci.rank(
        scores,
        multiplicity="max-t",
        missing="pairwise",
        rng=4,
        resampling="bootstrap",
        covariance="cluster",
    )
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)
    assert a.details["critical_values"] == b.details["critical_values"]
    payload = json.loads(json.dumps(a.to_dict(k=3), allow_nan=False))
    assert payload["multiplicity"] == "max-t" and payload["covariance"] == "cluster"
    assert payload["details"]["n_clusters"] == 30
    assert "cluster-robust" in a.guarantee and "asymptotic" in a.guarantee


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(test="wilcoxon"), "cannot be combined with test='wilcoxon'"),
        (dict(reps=10), "unknown option 'reps'"),
        (dict(resampling="jackknife"), "unknown resampling"),
        (dict(covariance="hc3"), "unknown covariance"),
        (dict(unit="cluster", covariance="cluster"), "units nested in clusters"),
        (dict(draws=0), "draws must be an integer"),
    ],
)
def test_bad_max_t_options_are_clear_errors(kwargs, message):
    scores = rankci.read_scores(ORACLES / "small.csv.gz")
    with pytest.raises(ValueError, match=message):
        rankci.rank(scores, multiplicity="max-t", **kwargs)


def test_few_clusters_warn_that_holm_may_certify_more():
    scores = rankci.read_scores(ORACLES / "small.csv.gz")  # 20 clusters
    with pytest.warns(rankci.RankciWarning, match=r"only 20 independent clusters.*unit='cluster'"):
        rankci.rank(scores, multiplicity="max-t", covariance="cluster", rng=0)


def test_cluster_covariance_needs_a_cluster_column():
    scores = Scores.from_matrix(np.eye(4)[:, :2])
    with pytest.raises(ValueError, match="needs a cluster column"):
        rankci.rank(scores, multiplicity="max-t", covariance="cluster")


@pytest.mark.parametrize(
    ("mean", "cov", "message"),
    [
        ([0.1, np.nan], np.eye(2), "finite vector"),
        ([0.1, 0.2], np.eye(3), "shape"),
        ([0.1, 0.2], [[1.0, 0.5], [0.0, 1.0]], "symmetric"),
        ([0.1, 0.2], [[1.0, np.inf], [np.inf, 1.0]], "non-finite"),
    ],
)
def test_bad_means_and_covariances(mean, cov, message):
    with pytest.raises(ValueError, match=message):
        maxt_ranking_from_cov(mean, cov)


def test_tau_best_needs_simultaneous_coverage():
    scores = rankci.read_scores(ORACLES / "small.csv.gz")
    marginal = rankci.rank(scores, coverage="marginal")
    with pytest.raises(ValueError, match="simultaneous"):
        rankci.tau_best(marginal, 1)
    with pytest.raises(ValueError, match="at most the number of models"):
        rankci.tau_best(rankci.rank(scores), 6)
    best = rankci.tau_best(scores, 2, multiplicity="max-t", rng=0)
    assert best.members[0] == "m05" and best.in_set.sum() == len(best.members)
    assert json.loads(json.dumps(best.to_dict()))["tau"] == 2
    assert "TauBest(tau=2" in repr(best)


@pytest.mark.filterwarnings("ignore:max-t with only:rankci.RankciWarning")
def test_cli_rank_max_t_and_taubest(capsys):
    path = str(ORACLES / "small.csv.gz")
    assert (
        main(
            [
                "rank",
                path,
                "--multiplicity",
                "max-t",
                "--seed",
                "1",
                "--draws",
                "2000",
                "--covariance",
                "cluster",
                "--format",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["resampling"] == "gaussian" and out["draws"] == 2000
    assert main(["taubest", path, "--tau", "1", "--multiplicity", "max-t", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "confidence set for the best model (1 models): m05" in text
    assert (
        main(
            [
                "rank",
                path,
                "--multiplicity",
                "max-t",
                "--single-step",
                "--coverage",
                "marginal",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("model,score,rank,rank_lower")
    assert (
        main(
            [
                "rank",
                path,
                "--multiplicity",
                "max-t",
                "--by-cluster",
                "--seed",
                "2",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("cluster,model")
    assert main(["rank", path, "--multiplicity", "max-t", "--test", "sign"]) == 2
    assert "cannot be combined" in capsys.readouterr().err
