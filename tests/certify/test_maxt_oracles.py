"""Max-t rank intervals and tau-best sets against R: sandwich, csranks 1.2.3 and multcomp 1.4-22.

Oracle conventions (tests/fixtures/oracles/README.md, sections 4-6): csranks and multcomp are
Monte-Carlo / quasi-Monte-Carlo, so rank bounds may differ by one where a decision is borderline,
i.e. where a studentized difference lies within about 0.05 of a critical value. Everywhere else the
sets must be identical.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.certify.maxt import maxt_ranking_from_cov
from rankci.evidence.covariance import unit_clusters, units_covariance

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
DATASETS = ("small", "medium", "unbalanced")
SIGMAS = ("item_HC0", "cluster_HC0")
BORDER = 0.05


def _means_cov(dataset: str, sigma: str):
    frame = pd.read_csv(ORACLES / dataset / f"means_cov_{sigma}.csv")
    return frame["model"].tolist(), frame["mean"].to_numpy(), frame.iloc[:, 2:].to_numpy()


def _studentized(mean, cov):
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = (mean[:, None] - mean[None, :]) / np.sqrt(var)
    np.fill_diagonal(stat, np.nan)
    return stat


def _borderline(stat, crits_by_model):
    """Models with a pair statistic within BORDER of one of the critical values used for them."""
    out = np.zeros(stat.shape[0], dtype=bool)
    for j, crits in enumerate(crits_by_model):
        values = np.concatenate([stat[j], stat[:, j]])
        values = values[np.isfinite(values)]
        out[j] = any(np.min(np.abs(values - c)) < BORDER for c in crits)
    return out


def _compare(mine_lower, mine_upper, lower, upper, borderline, label):
    for j in range(len(lower)):
        slack = 1 if borderline[j] else 0
        assert abs(mine_lower[j] - lower[j]) <= slack, (label, j, "lower")
        assert abs(mine_upper[j] - upper[j]) <= slack, (label, j, "upper")


# ---------------------------------------------------------------------- covariance of the means
@pytest.mark.parametrize("dataset", DATASETS)
def test_mean_covariance_matches_sandwich_vcovCL(dataset):
    scores = rankci.read_scores(ORACLES / f"{dataset}.csv.gz")
    units = scores.units("item", "pairwise")
    groups = unit_clusters(scores, units)
    cases = {
        "item_HC0": units_covariance(units),
        "cluster_HC0": units_covariance(units, groups),
        "cluster_HC0_cadj": units_covariance(units, groups, small_sample=True),
    }
    for sigma, est in cases.items():
        frame = pd.read_csv(ORACLES / dataset / f"means_cov_{sigma}.csv")
        assert list(est.models) == frame["model"].tolist()
        np.testing.assert_allclose(est.mean, frame["mean"], rtol=1e-12)
        np.testing.assert_allclose(est.cov, frame.iloc[:, 2:].to_numpy(), rtol=1e-9, atol=1e-15)


def test_small_sample_covariance_gives_the_paired_t_statistics():
    scores = rankci.read_scores(ORACLES / "small.csv.gz")
    est = units_covariance(scores.units("item"), small_sample=True)
    raw = pd.read_csv(ORACLES / "small" / "pairwise_raw_stats.csv")
    stat = _studentized(est.mean, est.cov)
    index = {m: k for k, m in enumerate(est.models)}
    for row in raw.itertuples(index=False):
        j, l = index[row.group1], index[row.group2]
        assert stat[j, l] == pytest.approx(row.t, rel=1e-9)


# ---------------------------------------------------------------------- csranks
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_rank_sets_match_csranks(dataset, sigma):
    models, mean, cov = _means_cov(dataset, sigma)
    oracle = pd.read_csv(ORACLES / dataset / "csranks_rank_cs.csv")
    oracle = oracle[(oracle["sigma"] == sigma) & (oracle["R"] == 50000)]
    stat = _studentized(mean, cov)
    exact = 0
    for simul in (True, False):
        for stepdown in (True, False):
            coverage = "simultaneous" if simul else "marginal"
            ranking = maxt_ranking_from_cov(
                mean,
                cov,
                models=models,
                coverage=coverage,
                stepdown=stepdown,
                draws=50_000,
                rng=20240601,
            )
            rows = oracle[(oracle["simul"] == simul) & (oracle["stepdown"] == stepdown)]
            rows = rows.set_index("model").loc[models]
            crits = ranking.details["critical_values"]
            per_model = [crits] * len(models) if simul else [crits[m] for m in models]
            borderline = _borderline(stat, per_model)
            _compare(
                ranking.lower,
                ranking.upper,
                rows["L"].to_numpy(),
                rows["U"].to_numpy(),
                borderline,
                (dataset, sigma, coverage, stepdown),
            )
            exact += int(
                np.array_equal(ranking.lower, rows["L"])
                and np.array_equal(ranking.upper, rows["U"])
            )
            np.testing.assert_array_equal(ranking.rank, rows["rank"])
    assert exact >= 3  # borderline slack is the exception, not the rule


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_tau_best_sets_match_cstaubest(dataset, sigma):
    models, mean, cov = _means_cov(dataset, sigma)
    oracle = pd.read_csv(ORACLES / dataset / "csranks_taubest.csv")
    ranking = maxt_ranking_from_cov(mean, cov, models=models, draws=50_000, rng=20240601)
    stat = _studentized(mean, cov)
    borderline = _borderline(stat, [ranking.details["critical_values"]] * len(models))
    for tau in (1, 3):
        want = oracle[(oracle["sigma"] == sigma) & (oracle["tau"] == tau)]
        want = want.set_index("model").loc[models, "in_tau_best"].to_numpy(dtype=bool)
        best = rankci.tau_best(ranking, tau)
        got = best.in_set
        disagree = got != want
        assert not (disagree & ~borderline).any(), (tau, np.asarray(models)[disagree])
        assert set(best.members) == {m for m, g in zip(models, got, strict=True) if g}


# ---------------------------------------------------------------------- multcomp single-step
@pytest.mark.parametrize("dataset", DATASETS)
def test_single_step_with_an_accurate_quantile_matches_multcomp(dataset):
    oracle = pd.read_csv(ORACLES / dataset / "multcomp_singlestep_rank_cs.csv")
    for sigma in SIGMAS:
        models, mean, cov = _means_cov(dataset, sigma)
        rows = oracle[oracle["sigma"] == sigma].set_index("model").loc[models]
        ranking = maxt_ranking_from_cov(
            mean, cov, models=models, stepdown=False, draws=2**19, rng=7
        )
        (crit,) = ranking.details["critical_values"]
        # mvtnorm's calpha is good to about +-0.005 for M = 12; 2^19 draws give about +-0.002
        assert crit == pytest.approx(rows["calpha"].iloc[0], abs=0.008)
        borderline = rows["min_abs_z_minus_calpha"].to_numpy() < BORDER
        _compare(
            ranking.lower,
            ranking.upper,
            rows["L"].to_numpy(),
            rows["U"].to_numpy(),
            borderline,
            (dataset, sigma),
        )
