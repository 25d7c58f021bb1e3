"""PPI / PPI++ rectified units (rankci.analyses.ppi) against ppi-python's numbers and the formulas.

The ppi-python numbers are in tests/fixtures/ppi (written by make_ppi_oracle.py in a separate
venv; ppi-python is never imported here).
"""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import rankci
from rankci._base import RankciWarning
from rankci.analyses.ppi import MIN_LABELS, ppi_labels_needed, ppi_pairwise, ppi_scores
from rankci.certify.holm import certify_holm

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ppi"
DATA = pd.read_csv(FIXTURES / "data.csv", dtype={"item": str})
EXPECTED = pd.read_csv(FIXTURES / "expected.csv").set_index(["case", "model"])
Z = stats.norm.ppf(0.975)


def fit(case, **kwargs):
    """The fixture's 0/1 human verdicts correlate weakly with the judge for some models: the
    "gains nothing" warning is tested on its own below."""
    frame = DATA[DATA["case"] == case].drop(columns="case")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        return ppi_scores(frame, **kwargs)


def oracle(case, column):
    return EXPECTED.xs(case, level="case")[column]


def test_auto_lam_is_the_least_squares_slope():
    result = fit("uniform")
    np.testing.assert_allclose(result.lam, oracle("uniform", "slope").loc[list(result.models)],
                               rtol=1e-10)
    strat = fit("stratified", sampling="stratified", inclusion="pi")
    np.testing.assert_allclose(strat.lam, oracle("stratified", "slope_w").loc[list(strat.models)],
                               rtol=1e-8)


@pytest.mark.parametrize("name, lam", [("slope", "auto"), ("one", 1.0), ("zero", 0.0)])
def test_point_estimate_equals_ppi_python(name, lam):
    result = fit("uniform", lam=lam)
    expected = oracle("uniform", f"est_{name}").loc[list(result.models)].to_numpy()
    np.testing.assert_allclose(result.fits["ppi"], expected, rtol=1e-10)
    # and the mean of the rectified units is that estimate
    np.testing.assert_allclose(result.scores.units().model_scores(), expected, rtol=1e-10)


def test_interval_at_the_tuned_lam_equals_ppi_mean_ci():
    """At lam = the LS slope, s_y^2 / N = N/(N-1) x ppi-python's CLT variance, exactly."""
    result = fit("uniform")
    N = result.n_items
    models = list(result.models)
    half = (oracle("uniform", "upper_slope") - oracle("uniform", "lower_slope")).loc[models] / 2
    np.testing.assert_allclose(result.fits["ppi_se"] * np.sqrt((N - 1) / N) * Z, half, rtol=1e-9)
    centre = (oracle("uniform", "upper_slope") + oracle("uniform", "lower_slope")).loc[models] / 2
    np.testing.assert_allclose(result.fits["ppi"], centre, rtol=1e-10)


def test_human_only_interval_is_the_clt_interval_of_the_labels():
    result = fit("uniform")
    models = list(result.models)
    N = result.n_items
    half = (oracle("uniform", "upper_zero") - oracle("uniform", "lower_zero")).loc[models] / 2
    np.testing.assert_allclose(result.fits["human_se"] * np.sqrt((N - 1) / N) * Z, half,
                               rtol=1e-9)
    np.testing.assert_allclose(result.fits["human"], oracle("uniform", "est_zero").loc[models],
                               rtol=1e-12)


def test_classic_ppi_variance_formula():
    """At a lam other than the slope the all-items form adds 2 lam Cov(f, h - lam f) / N to
    ppi-python's (separate-sample) variance; checked directly and against ppi_mean_ci."""
    result = fit("uniform", lam=1.0)
    frame = DATA[DATA["case"] == "uniform"]
    N = result.n_items
    for j, model in enumerate(result.models):
        rows = frame[frame["model"] == model].sort_values("item")
        f_all = rows["judge"].to_numpy()
        lab = rows["human"].notna().to_numpy()
        h, f = rows["human"].to_numpy()[lab], f_all[lab]
        n = lab.sum()
        g = h - f
        cross = np.mean((f - f.mean()) * (g - g.mean()))
        ppi_python_var = f_all.var() / N + g.var() / n
        lower, upper = oracle("uniform", "lower_one")[model], oracle("uniform", "upper_one")[model]
        np.testing.assert_allclose(((upper - lower) / (2 * Z)) ** 2, ppi_python_var, rtol=1e-9)
        ours = N / (N - 1) * (ppi_python_var + 2 * cross / N)
        np.testing.assert_allclose(result.fits["ppi_se"].iloc[j] ** 2, ours, rtol=1e-10)


def test_ppi_python_power_tuned_lam_gives_its_estimate():
    models = list(fit("uniform").models)
    for model in models:
        lam = float(oracle("uniform", "lam_auto")[model])
        result = fit("uniform", lam=lam)
        np.testing.assert_allclose(result.fits.set_index("model")["ppi"][model],
                                   oracle("uniform", "est_auto")[model], rtol=1e-10)


@pytest.mark.parametrize("name, lam", [("one", 1.0), ("slope", "auto")])
def test_stratified_estimate_is_the_weighted_ppi_python_estimate(name, lam):
    result = fit("stratified", sampling="stratified", inclusion="pi", lam=lam)
    expected = oracle("stratified", f"est_{name}_w").loc[list(result.models)]
    np.testing.assert_allclose(result.fits["ppi"], expected, rtol=1e-8)


def test_pairing_is_kept_difference_units_are_the_difference_estimate():
    result = fit("uniform")
    Y = result.scores.units().values
    d = Y[:, 0] - Y[:, 1]
    est = result.fits["ppi"].to_numpy()
    assert d.mean() == pytest.approx(est[0] - est[1], rel=1e-12)
    pairwise = rankci.pairwise_tests(result.scores.units(), test="t")
    se = d.std(ddof=1) / np.sqrt(len(d))
    assert pairwise.statistic[0, 1] == pytest.approx((est[0] - est[1]) / se, rel=1e-9)


def test_effective_labels_and_three_fits():
    result = fit("uniform")
    f = result.fits
    np.testing.assert_allclose(f["effective_labels"],
                               f["n_labelled"] * f["human_se"] ** 2 / f["ppi_se"] ** 2)
    judge = DATA[DATA["case"] == "uniform"].groupby("model")["judge"].mean()
    np.testing.assert_allclose(f["judge"], judge.loc[list(result.models)], rtol=1e-12)
    table = result.intervals(0.05)
    assert {"judge_lower", "human_upper", "ppi_lower"} <= set(table.columns)
    assert result.to_dict()["fits"][0]["model"] == "alpha"
    assert "PPIScores(3 models, 300 items" in repr(result)


def test_per_pair_lam_equals_ppi_python_on_the_difference():
    result = fit("uniform")
    evidence = ppi_pairwise(result)
    pairs = pd.read_csv(FIXTURES / "expected_pairs.csv")
    N = result.n_items
    idx = {m: k for k, m in enumerate(result.models)}
    j = pairs["first"].map(idx).to_numpy()
    l = pairs["second"].map(idx).to_numpy()
    lam = np.asarray(evidence.options["lam"], dtype=float)
    np.testing.assert_allclose(lam[j, l], pairs["slope"], rtol=1e-9)
    np.testing.assert_allclose(evidence.estimate[j, l], pairs["est"], rtol=1e-9, atol=1e-13)
    half = (pairs["upper"] - pairs["lower"]) / 2
    np.testing.assert_allclose(evidence.se[j, l] * np.sqrt((N - 1) / N) * Z, half, rtol=1e-9)


def test_per_pair_moments_equal_the_paired_t_on_explicit_difference_units():
    """The closed form against the units d_i built one pair at a time (stratified weights)."""
    frame = DATA[DATA["case"] == "stratified"].drop(columns="case")
    # one labelled set for all models (the stratified case draws it per item already)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = ppi_scores(frame, sampling="stratified", inclusion="pi")
    evidence = ppi_pairwise(result, delta=0.01)
    F, H, W = (result.arrays[k] for k in "FHW")
    N = F.shape[0]
    for j in range(3):
        for l in range(3):
            if j == l:
                continue
            w = W[:, j]
            lab = w > 0
            f, h = F[:, j] - F[:, l], H[:, j] - H[:, l]
            lam = np.polyfit(f[lab], h[lab], 1, w=np.sqrt(w[lab]))[0]
            g = np.where(lab, h - lam * f, 0.0)
            gbar = (w * g).sum() / w.sum()
            d = lam * f + gbar + w * np.where(lab, g - gbar, 0.0)
            t = stats.ttest_1samp(d, 0.01, alternative="greater")
            assert evidence.estimate[j, l] == pytest.approx(d.mean(), rel=1e-9)
            assert evidence.statistic[j, l] == pytest.approx(t.statistic, rel=1e-8)
            assert evidence.pvalue[j, l] == pytest.approx(t.pvalue, rel=1e-7, abs=1e-15)
            assert evidence.n[j, l] == N
    with pytest.warns(RankciWarning, match="nothing is certified: .* ppi\\+\\+ t"):
        ranking = certify_holm(evidence, 0.05).ranking()
    assert ranking.lower.tolist() == [1, 1, 1]


def test_per_pair_refuses_labels_that_differ_between_models():
    frame = frame_uniform()
    first = frame.index[(frame["model"] == "gamma") & frame["human"].notna()][0]
    frame.loc[first, "human"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = ppi_scores(frame)
    with pytest.raises(ValueError, match="model 'gamma''s differ from model 'alpha''s"):
        ppi_pairwise(result)


# ------------------------------------------------------------------------------ bad input


def frame_uniform():
    return DATA[DATA["case"] == "uniform"].drop(columns="case").reset_index(drop=True)


def test_missing_judge_column_is_named():
    with pytest.raises(ValueError, match="the judge column 'grader' is not in the table"):
        ppi_scores(frame_uniform(), judge="grader")


def test_human_outside_range_names_the_row():
    frame = frame_uniform()
    row = frame.index[frame["human"].notna()][3]
    frame.loc[row, "human"] = 1.5
    with pytest.raises(ValueError, match=rf"'human' has 1.5 at row {row} \(model "):
        ppi_scores(frame)


def test_model_without_labels_is_named():
    frame = frame_uniform()
    frame.loc[frame["model"] == "beta", "human"] = np.nan
    with pytest.raises(ValueError, match="model 'beta' has no human labels"):
        ppi_scores(frame)


def test_missing_judge_cell_is_named():
    frame = frame_uniform().iloc[1:]
    with pytest.raises(ValueError, match="no score for model 'alpha' on item 'q000'"):
        ppi_scores(frame)


def test_bad_inclusion_and_sampling():
    frame = frame_uniform()
    with pytest.raises(ValueError, match="needs inclusion="):
        ppi_scores(frame, sampling="stratified")
    frame.loc[frame["human"].notna().idxmax(), "pi"] = 0
    with pytest.raises(ValueError, match="inclusion column 'pi' must hold a probability"):
        ppi_scores(frame, sampling="stratified", inclusion="pi")
    with pytest.raises(ValueError, match="sampling"):
        ppi_scores(frame, sampling="random")
    with pytest.raises(ValueError, match='lam must be "auto", a number or a dict'):
        ppi_scores(frame, lam="per-model")


def test_few_labels_warn():
    frame = frame_uniform()
    keep = frame["item"].isin(sorted(frame.loc[frame["human"].notna(), "item"].unique())[:20])
    frame.loc[~keep, "human"] = np.nan
    with pytest.warns(RankciWarning, match=f"fewer than {MIN_LABELS} human labels for 'alpha'"):
        result = ppi_scores(frame)
    assert any("fewer than" in w for w in result.warnings)


def test_uninformative_judge_warns_gains_nothing():
    frame = frame_uniform()
    rng = np.random.default_rng(1)
    frame["judge"] = rng.random(len(frame))  # a judge unrelated to the humans
    with pytest.warns(RankciWarning, match=r"PPI gains nothing over human-only for .*corr = "):
        result = ppi_scores(frame)
    assert (result.effective_labels < 1.1 * result.n_labelled).any()


def test_labels_needed_matches_the_variance_formula():
    n = ppi_labels_needed(0.08, sd_human=0.45, corr=0.7, n_items=5000)
    var = lambda k: 0.45**2 * (0.49 / 5000 + 0.51 / k)  # noqa: E731
    assert 2 * Z * np.sqrt(var(n)) <= 0.08 < 2 * Z * np.sqrt(var(n - 1))
    with pytest.raises(ValueError, match="not reachable"):
        ppi_labels_needed(0.001, sd_human=0.45, corr=0.7, n_items=5000)


# a weak judge for one model: the subject is the zero variance of another
@pytest.mark.filterwarnings("ignore:PPI gains nothing over human-only:rankci.RankciWarning")
def test_all_equal_labels_give_a_named_zero_variance():
    frame = frame_uniform()
    labelled = frame["human"].notna() & (frame["model"] == "alpha")
    frame.loc[labelled, "human"] = 1.0
    with pytest.warns(RankciWarning, match="PPI units of model 'alpha' do not vary"):
        result = ppi_scores(frame)
    row = result.fits.set_index("model").loc["alpha"]
    assert row["ppi_se"] == 0 and np.isnan(row["effective_labels"]) and row["lam"] == 0


def test_cluster_column_is_carried_into_the_units():
    frame = frame_uniform()
    frame["topic"] = "t" + (frame["item"].str[1:].astype(int) % 40).astype(str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        result = ppi_scores(frame, cluster="topic")
    assert len(result.scores.clusters) == 40
    np.testing.assert_allclose(result.scores.units().values, fit("uniform").scores.units().values)
    item = result.scores.items.index("q041")
    assert result.scores.clusters[result.scores.item_cluster[item]] == "t1"
