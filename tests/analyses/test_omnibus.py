"""Repeated-measures ANOVA, Friedman, Tukey HSD and Nemenyi against R (car, stats), scipy and
statsmodels, and the post-hoc guarantees by a small Monte-Carlo study."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import rankci
from rankci.analyses.omnibus import friedman, rm_anova
from rankci.analyses.posthoc import nemenyi, tukey_hsd

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
DATASETS = ("small", "medium", "unbalanced")


def load(name: str) -> rankci.Scores:
    frame = pd.read_csv(ORACLES / f"{name}.csv.gz")
    return rankci.Scores.from_frame(frame, cluster="cluster")


def oracle(name: str, table: str) -> pd.DataFrame:
    return pd.read_csv(ORACLES / name / f"{table}.csv")


@pytest.fixture(scope="module", params=DATASETS)
def dataset(request):
    return request.param, load(request.param)


# ---------------------------------------------------------------------- RM-ANOVA
def test_rm_anova_matches_car(dataset):
    name, scores = dataset
    result = rm_anova(scores)
    car = oracle(name, "rm_anova_car").set_index("term").loc["model"]
    pairs = {
        "F": result.F,
        "p": result.p,
        "GG_eps": result.gg_epsilon,
        "p_GG": result.p_gg,
        "HF_eps": result.hf_epsilon,
        "p_HF": result.p_hf,
        "mauchly_stat": result.mauchly_w,
        "mauchly_p": result.mauchly_p,
        "SS": result.ss_model,
        "ErrorSS": result.ss_error,
        "numDf": result.df_num,
        "denDf": result.df_den,
    }
    for key, mine in pairs.items():
        assert mine == pytest.approx(car[key], rel=1e-8), key


def test_rm_anova_items_stratum_and_complete_cases(dataset):
    name, scores = dataset
    result = rm_anova(scores)
    aov = oracle(name, "rm_anova_aov")
    items = aov[(aov.error_formula == "Error(item)") & (aov.stratum == "Error: item")].iloc[0]
    assert result.ss_items == pytest.approx(items.SumSq, rel=1e-8)
    info = oracle(name, "complete_case_info").iloc[0]
    assert result.n_items == info.n_items_complete
    assert result.excluded["observations_excluded"] == info.n_items_total - info.n_items_complete


def test_rm_anova_generalized_eta_squared_matches_rstatix(dataset):
    name, scores = dataset
    ges = oracle(name, "rm_anova_rstatix").set_index("correction").loc["none", "ges"]
    assert rm_anova(scores).eta2_generalized == pytest.approx(ges, abs=5e-4)  # rstatix rounds


def test_rm_anova_matches_statsmodels_anovarm():
    from statsmodels.stats.anova import AnovaRM

    scores = load("unbalanced")
    full = scores.units("item", "complete")
    units = rankci.Scores.from_matrix(full.values[:150], models=full.models).units()
    n, k = units.values.shape
    long = pd.DataFrame(
        {
            "item": np.repeat(np.arange(n), k),
            "model": np.tile(units.models, n),
            "score": units.values.reshape(-1),
        }
    )
    table = AnovaRM(long, "score", "item", within=["model"]).fit().anova_table
    result = rm_anova(units)
    assert result.F == pytest.approx(table["F Value"].iloc[0], rel=1e-10)
    assert result.p == pytest.approx(table["Pr > F"].iloc[0], rel=1e-8)
    assert result.df_den == table["Den DF"].iloc[0]


def test_rm_anova_effect_sizes_from_definitions():
    rng = np.random.default_rng(5)
    y = rng.normal(size=(30, 4)) + rng.normal(size=(30, 1)) + np.array([0, 0.2, 0.4, 0.1])
    result = rm_anova(rankci.Scores.from_matrix(y, bounds=None))
    grand = y.mean()
    ss_model = 30 * ((y.mean(0) - grand) ** 2).sum()
    ss_items = 4 * ((y.mean(1) - grand) ** 2).sum()
    resid = y - y.mean(1, keepdims=True) - y.mean(0) + grand
    ss_error = (resid**2).sum()
    assert result.eta2_partial == pytest.approx(ss_model / (ss_model + ss_error), rel=1e-12)
    assert result.eta2_generalized == pytest.approx(
        ss_model / (ss_model + ss_items + ss_error), rel=1e-12
    )
    # with two models the RM-ANOVA F is the square of the paired t (the source, Section 3)
    pair = rm_anova(rankci.Scores.from_matrix(y[:, :2], bounds=None))
    t = stats.ttest_rel(y[:, 0], y[:, 1]).statistic
    assert pair.F == pytest.approx(t**2, rel=1e-12)
    assert pair.gg_epsilon == 1.0 and pair.mauchly_p == 1.0


# ---------------------------------------------------------------------- Friedman
def test_friedman_matches_r(dataset):
    name, scores = dataset
    result = friedman(scores)
    r = oracle(name, "friedman").iloc[0]
    assert result.chi2 == pytest.approx(r.statistic, rel=1e-8)
    assert result.p == pytest.approx(r.p, rel=1e-8)
    assert result.df == r.df
    assert result.kendall_w == pytest.approx(r.kendall_W, rel=1e-8)
    assert result.n_items == r.n_blocks


def test_friedman_matches_scipy_with_ties_and_continuous_scores():
    rng = np.random.default_rng(11)
    y = np.round(rng.normal(size=(25, 6)), 1)  # many ties
    result = friedman(rankci.Scores.from_matrix(y, bounds=None))
    reference = stats.friedmanchisquare(*y.T)
    assert result.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert result.p == pytest.approx(reference.pvalue, rel=1e-10)
    assert result.mean_ranks == pytest.approx(stats.rankdata(y, axis=1).mean(0), rel=1e-12)


def test_iman_davenport_is_the_rm_anova_f_on_ranks():
    rng = np.random.default_rng(12)
    y = np.round(rng.normal(size=(40, 5)) + np.arange(5) * 0.2, 1)
    result = friedman(rankci.Scores.from_matrix(y, bounds=None))
    on_ranks = rm_anova(rankci.Scores.from_matrix(stats.rankdata(y, axis=1), bounds=None))
    assert result.iman_davenport == pytest.approx(on_ranks.F, rel=1e-10)
    assert result.p_iman_davenport == pytest.approx(on_ranks.p, rel=1e-8)


# ---------------------------------------------------------------------- post-hoc
def test_tukey_hsd_matches_emmeans_tukey_on_balanced_data():
    """small is balanced and complete; emmeans' Tukey on the lmer fit uses the same error term
    up to lme4's optimiser tolerance (residual variance 1.6e-6 away from the ANOVA MS)."""
    posthoc = tukey_hsd(load("small"))
    emm = oracle("small", "emmeans_pairs")
    emm = emm[(emm.df_method == "satterthwaite") & (emm.adjust == "tukey")]
    assert posthoc.table.estimate.to_numpy() == pytest.approx(emm.estimate.to_numpy(), abs=1e-12)
    assert posthoc.table.p_adjusted.to_numpy() == pytest.approx(emm.p_value.to_numpy(), rel=1e-4)
    assert posthoc.table.lower.to_numpy() == pytest.approx(emm["lower.CL"].to_numpy(), rel=1e-4)
    assert posthoc.df == 1596


def test_tukey_pvalues_against_direct_integration():
    """P(Q_{k,df} >= q) by numerical integration over the normal range and the chi scale."""
    from scipy import integrate, special

    from rankci.analyses.posthoc import tukey_pvalues

    k, df, t = 12, 400.0, 4.2

    def range_sf(q):
        def f(z):
            return stats.norm.pdf(z) * (
                special.ndtr(z) ** (k - 1) - (special.ndtr(z) - special.ndtr(z - q)) ** (k - 1)
            )

        return k * integrate.quad(f, -10, 10, epsabs=1e-14, epsrel=1e-10, limit=200)[0]

    def weight(s):
        return stats.chi.pdf(s * np.sqrt(df), df) * np.sqrt(df) * range_sf(np.sqrt(2) * t * s)

    exact = integrate.quad(weight, 0.6, 1.4, epsabs=1e-14, epsrel=1e-8, limit=100)[0]
    assert tukey_pvalues(np.array([t]), k, df)[0] == pytest.approx(exact, rel=1e-6)


# random 0/1 data: the subject is the critical value, not Friedman's verdict on the data
@pytest.mark.filterwarnings("ignore:Nemenyi. Friedman's test did not reject:rankci.RankciWarning")
def test_nemenyi_critical_values_match_demsar_table():
    """Demsar (2006), Table 5(a): q_0.05 = 1.960, 2.343, 2.569, 2.728, 2.850 for k = 2..6."""
    rng = np.random.default_rng(3)
    for k, q in zip(range(2, 7), (1.960, 2.343, 2.569, 2.728, 2.850), strict=True):
        y = rng.integers(0, 2, size=(30, k))
        y[0] = np.arange(k) % 2  # not all tied
        result = nemenyi(rankci.Scores.from_matrix(y))
        assert result.critical_value == pytest.approx(q, abs=1e-3)  # Demsar truncates
        ranks = friedman(rankci.Scores.from_matrix(y)).mean_ranks
        cd = q * np.sqrt(k * (k + 1) / (6 * 30))
        assert result.table.estimate.iloc[0] == pytest.approx(ranks[0] - ranks[1], abs=1e-12)
        assert result.table.upper.iloc[0] - result.table.estimate.iloc[0] == pytest.approx(
            cd, abs=1e-3
        )


# a null Monte-Carlo study: Friedman rarely rejects and rankci rightly says so each time
@pytest.mark.filterwarnings("ignore:Nemenyi. Friedman's test did not reject:rankci.RankciWarning")
# sphericity holds by construction, so Mauchly's test rejects in about alpha of the replications
@pytest.mark.filterwarnings("ignore:Tukey HSD. Mauchly's test rejects:rankci.RankciWarning")
def test_posthoc_familywise_error_under_the_null():
    """Fast version of validation/omnibus_study.py: with i.i.d. normal errors and equal means,
    Tukey and Nemenyi make any false claim in at most about alpha of the replications (many
    items, so that the studentized range is evaluated quickly; the study covers small n)."""
    rng = np.random.default_rng(2024)
    reps, n, k = 200, 30000, 5
    tukey_any = nemenyi_any = anova_reject = 0
    models, labels = tuple(f"m{j}" for j in range(k)), tuple(str(i) for i in range(n))
    for _ in range(reps):
        y = rng.normal(size=(n, k)) + rng.normal(size=(n, 1))
        scores = rankci.UnitScores(y, models, labels, "item", "complete", {}, False)
        tukey_any += tukey_hsd(scores).table.p_adjusted.min() <= 0.05
        nemenyi_any += nemenyi(scores).table.p_adjusted.min() <= 0.05
        anova_reject += rm_anova(scores).p <= 0.05
    # binomial(200, 0.05): mean 10, sd 3.1; allow about 3 sd above
    for count in (tukey_any, nemenyi_any, anova_reject):
        assert count <= 20
    assert tukey_any >= 2 and anova_reject >= 2  # and the tests are not trivially silent


# ---------------------------------------------------------------------- contracts
def test_results_are_json_safe_and_readable():
    scores = load("unbalanced")
    for result in (rm_anova(scores), friedman(scores), tukey_hsd(scores), nemenyi(scores)):
        payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        assert payload["excluded"]["observations_excluded"] == 600
        assert isinstance(result.to_frame(), pd.DataFrame)
        assert type(result).__name__ in repr(result)
    anova = rm_anova(scores).to_dict()
    assert {"method", "F", "df_num", "df_den", "p", "gg_epsilon", "hf_epsilon", "n_items"} <= set(
        anova
    )
    fr = friedman(scores).to_dict()
    assert {"method", "chi2", "df", "p", "kendall_w"} <= set(fr)


def test_bad_input_is_a_clear_error():
    units = rankci.Scores.from_matrix(np.array([[1, np.nan], [0, 1], [1, 1]])).units(
        "item", "pairwise"
    )
    with pytest.raises(ValueError, match="missing='complete'"):
        rm_anova(units)
    constant = rankci.Scores.from_matrix(np.ones((5, 3)))
    with pytest.raises(ValueError, match="same score"):
        rm_anova(constant)
    with pytest.raises(ValueError, match="same score"):
        friedman(constant)
    with pytest.raises(ValueError, match="at least 2 complete items"):
        friedman(rankci.Scores.from_matrix(np.array([[1.0, 0.0]])))
    with pytest.raises(ValueError, match="alpha"):
        tukey_hsd(load("small"), alpha=1.5)


def test_an_undefined_mauchly_test_says_why(tmp_path, capsys):
    from rankci.cli import main

    # 3 items, 4 models: the error df (2) does not exceed the 3 contrasts
    x = np.array([[1, 0, 0.5, 1], [0, 1, 0.5, 0], [1, 1, 0.0, 1.0]])
    result = rankci.rm_anova(rankci.Scores.from_matrix(x))
    assert np.isnan(result.mauchly_w)
    assert "needs more items than models - 1" in result.notes["mauchly"]
    assert result.to_dict()["notes"] == result.notes
    frame = pd.DataFrame(
        [{"model": f"m{j}", "item": f"q{i}", "score": x[i, j]} for i in range(3) for j in range(4)]
    )
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    assert main(["omnibus", str(path)]) == 0
    assert "Mauchly W: n/a (Mauchly's test is not defined here" in capsys.readouterr().out


def test_rm_anova_per_model_se_against_r_descriptives():
    """Per-model SEs (seed 003 Sec. 6) equal R's sd/sqrt(n) on the complete 'small' design."""
    from rankci.commands.omnibus import _anova_text

    oracles = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
    desc = pd.read_csv(oracles / "small" / "descriptives.csv")
    scores = rankci.Scores.from_frame(pd.read_csv(oracles / "small.csv.gz"), cluster="cluster")
    result = rm_anova(scores)
    assert list(result.models) == desc.model.tolist() and (desc.n == result.n_items).all()
    np.testing.assert_allclose(result.se, desc.se_iid, rtol=1e-12)
    rows = json.loads(json.dumps(result.to_dict()))["means"]
    np.testing.assert_allclose([row["se"] for row in rows], desc.se_iid, rtol=1e-12)
    table = _anova_text(result, False).splitlines()
    header = next(line for line in table if line.startswith("model ") and "mean" in line)
    assert header.split() == ["model", "mean", "se"]
    assert f"{desc.se_iid[0]:.4f}" in next(line for line in table if line.startswith("m01 "))
