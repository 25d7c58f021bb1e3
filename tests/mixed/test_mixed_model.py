"""The REML mixed model against lme4 / lmerTest / emmeans (R oracles), statsmodels, closed-form
ANOVA estimators and a dense brute-force implementation of the same likelihood."""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

import rankci
from rankci.mixed import mixed_model, mixed_ranking, reml

ORACLES = Path(__file__).resolve().parents[1] / "fixtures" / "oracles"
DATASETS = ("small", "medium", "unbalanced")


def load(name: str) -> rankci.Scores:
    return rankci.Scores.from_frame(pd.read_csv(ORACLES / f"{name}.csv.gz"), cluster="cluster")


def oracle(name: str, table: str) -> pd.DataFrame:
    return pd.read_csv(ORACLES / name / f"{table}.csv")


def lme4_theta(name: str) -> np.ndarray:
    return np.array([float(v) for v in oracle(name, "lmer_fit").theta[0].split(";")])


@pytest.fixture(scope="module", params=DATASETS)
def fits(request):
    """(name, own REML fit, evaluation at lme4's optimum theta)."""
    name = request.param
    scores = load(name)
    return name, mixed_model(scores), mixed_model(scores, theta=lme4_theta(name))


def close(mine, reference, rel):
    mine, reference = np.asarray(mine, dtype=float), np.asarray(reference, dtype=float)
    assert mine == pytest.approx(reference, rel=rel, abs=0)


# ---------------------------------------------------------------------- the likelihood itself
def test_reml_criterion_and_sigma_at_lme4_theta(fits):
    """The same likelihood: at lme4's theta, REMLcrit and sigma agree to rounding."""
    name, _, at_lme4 = fits
    fit = oracle(name, "lmer_fit").iloc[0]
    close(at_lme4.reml_criterion, fit.REMLcrit, 1e-11)
    close(np.sqrt(at_lme4.variance_components["residual"]), fit.sigma, 1e-11)
    varcomp = oracle(name, "lmer_varcomp").set_index("group").variance
    close(at_lme4.variance_components["item"], varcomp["cluster:item"], 1e-10)
    close(at_lme4.variance_components["cluster"], varcomp["cluster"], 1e-10)


def test_own_optimum_is_at_least_as_good_as_lme4(fits):
    name, own, _ = fits
    assert own.reml_criterion <= oracle(name, "lmer_fit").REMLcrit[0] + 1e-8
    assert own.notes["optimizer"]["converged"]


def test_variance_components_match_lmer(fits):
    """1e-5 where lme4 converged tightly (medium, unbalanced). On small lme4 stopped 2e-7 above
    the optimum in REML criterion (see the test above and the closed form below), which moves
    its cluster variance by 3e-4 relative; we allow 5e-4 there."""
    name, own, _ = fits
    varcomp = oracle(name, "lmer_varcomp").set_index("group").variance
    rel = {"small": (1e-4, 5e-4)}.get(name, (1e-5, 1e-5))
    close(own.variance_components["residual"], varcomp["Residual"], rel[0])
    close(own.variance_components["item"], varcomp["cluster:item"], rel[0])
    close(own.variance_components["cluster"], varcomp["cluster"], rel[1])


@pytest.mark.parametrize("name", ["small", "medium"])
def test_balanced_reml_equals_closed_form_anova_estimators(name):
    """Balanced nested design: REML = the ANOVA (expected mean squares) estimators when they are
    positive (Searle, Casella and McCulloch 1992, Sec. 6.7)."""
    scores = load(name)
    y = scores.units("item", "complete").values  # items sorted by cluster, equal cluster sizes
    n_items, k = y.shape
    clusters = scores.item_cluster
    a = len(scores.clusters)
    b = n_items // a
    grand = y.mean()
    item_means = y.mean(1)
    cluster_means = np.bincount(clusters, weights=item_means) / b
    resid = y - item_means[:, None] - y.mean(0) + grand
    ms_error = (resid**2).sum() / ((n_items - 1) * (k - 1))
    ms_items = k * ((item_means - cluster_means[clusters]) ** 2).sum() / (a * (b - 1))
    ms_clusters = b * k * ((cluster_means - grand) ** 2).sum() / (a - 1)
    own = mixed_model(scores).variance_components
    close(own["residual"], ms_error, 1e-8)
    close(own["item"], (ms_items - ms_error) / k, 1e-7)
    close(own["cluster"], (ms_clusters - ms_items) / (b * k), 1e-6)


def test_variance_components_match_statsmodels():
    from statsmodels.regression.mixed_linear_model import MixedLM

    frame = pd.read_csv(ORACLES / "small.csv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = MixedLM.from_formula(
            "score ~ 0 + model",
            frame,
            groups="cluster",
            re_formula="1",
            vc_formula={"item": "0 + C(item)"},
        ).fit(reml=True, method=["lbfgs"])
    own = mixed_model(load("small"))
    close(own.variance_components["cluster"], float(fit.cov_re.iloc[0, 0]), 1e-3)
    close(own.variance_components["item"], float(fit.vcomp[0]), 5e-5)
    close(own.variance_components["residual"], fit.scale, 5e-5)
    close(own.emmean, fit.fe_params.to_numpy(), 1e-10)
    close(-own.reml_criterion / 2, fit.llf, 1e-9)


def test_no_cluster_model_matches_statsmodels_random_intercept():
    from statsmodels.regression.mixed_linear_model import MixedLM

    frame = pd.read_csv(ORACLES / "unbalanced.csv.gz").drop(columns="cluster")
    frame = frame[frame.item < "i00300"]
    fit = MixedLM.from_formula("score ~ 0 + model", frame, groups="item").fit(reml=True)
    own = mixed_model(rankci.Scores.from_frame(frame))
    assert own.formula == "score ~ model + (1|item)"
    close(own.variance_components["item"], float(fit.cov_re.iloc[0, 0]), 1e-4)
    close(own.variance_components["residual"], fit.scale, 1e-5)
    close(own.emmean, fit.fe_params.to_numpy(), 1e-6)
    # (statsmodels' cov_params inverts the joint Hessian with the variance parameters, not
    # (X'V^-1X)^-1 as lme4, so standard errors are checked against the dense reference instead)


# ---------------------------------------------------------------------- fixed effects, tests
def test_fixed_effects_match_lmertest(fits):
    name, own, at_lme4 = fits
    fixef = oracle(name, "lmer_fixef")
    close(at_lme4.fixed_effects.estimate, fixef.estimate, 1e-9)
    close(own.fixed_effects.estimate, fixef.estimate, 1e-6)  # GLS: depends on theta if unbalanced
    for result, rel_se, rel_df in ((at_lme4, 1e-10, 1e-6), (own, 1e-4, 1e-5)):
        close(result.fixed_effects.se, fixef.se, rel_se)
        close(result.fixed_effects.t, fixef.t, rel_se)
        model_rows = slice(1, None)  # the intercept's df depend on tau^2 (see small above)
        close(result.fixed_effects.df[model_rows], fixef.df_satterthwaite[model_rows], rel_df)
    close(at_lme4.fixed_effects.df, fixef.df_satterthwaite, 1e-6)
    close(at_lme4.fixed_effects.p, fixef.p, 1e-4)  # p = 1e-27 magnifies df differences
    close(
        own.fixed_effects.df.iloc[0],
        fixef.df_satterthwaite.iloc[0],
        3e-4 if name == "small" else 1e-5,
    )


def test_type3_f_test_matches_lmertest(fits):
    name, own, at_lme4 = fits
    anova = oracle(name, "lmer_anova_typeIII")
    row = anova[anova.ddf == "Satterthwaite"].iloc[0]
    for result, rel in ((at_lme4, 1e-7), (own, 1e-5)):
        test = result.model_test
        assert test["df_num"] == row.NumDF
        close(test["F"], row.F, rel)
        close(test["df_den"], row.DenDF, rel)
        close(test["p"], row.p, 20 * rel)


def test_emmeans_match(fits):
    name, own, at_lme4 = fits
    means = oracle(name, "emmeans_means")
    means = means[means.df_method == "satterthwaite"]
    close(at_lme4.emmean, means.emmean, 1e-9)
    close(own.emmean, means.emmean, 1e-6)
    close(at_lme4.emmean_se, means.SE, 1e-10)
    close(at_lme4.emmean_df, means.df, 1e-6)
    close(own.emmean_se, means.SE, 1e-4)
    close(own.emmean_df, means.df, 3e-4 if name == "small" else 1e-5)


@pytest.mark.parametrize("adjust", ["none", "holm", "bonferroni"])
def test_emmeans_pairs_match(fits, adjust):
    name, own, at_lme4 = fits
    pairs = oracle(name, "emmeans_pairs")
    pairs = pairs[(pairs.df_method == "satterthwaite") & (pairs.adjust == adjust)]
    column = {"none": "p", "holm": "p_holm", "bonferroni": "p_bonferroni"}[adjust]
    assert list(own.contrasts["first"] + " - " + own.contrasts["second"]) == list(pairs.contrast)
    close(at_lme4.contrasts.estimate, pairs.estimate, 1e-9)
    close(own.contrasts.estimate, pairs.estimate, 1e-6)
    close(at_lme4.contrasts.se, pairs.SE, 1e-10)
    close(at_lme4.contrasts.df, pairs.df, 1e-6)
    close(at_lme4.contrasts[column], pairs.p_value, 1e-6)
    close(own.contrasts.se, pairs.SE, 1e-5)
    close(own.contrasts.df, pairs.df, 1e-5)
    close(own.contrasts[column], pairs.p_value, 1e-4)
    if adjust == "none":
        close(at_lme4.contrasts.lower, pairs["lower.CL"], 1e-8)
        close(at_lme4.contrasts.upper, pairs["upper.CL"], 1e-8)


def test_emmeans_tukey_pairs(fits):
    """R's ptukey is accurate to about 4 significant digits in the tail (scipy's studentized
    range is checked against direct integration in test_omnibus.py)."""
    name, _, at_lme4 = fits
    pairs = oracle(name, "emmeans_pairs")
    pairs = pairs[(pairs.df_method == "satterthwaite") & (pairs.adjust == "tukey")]
    assert at_lme4.contrasts.p_tukey.to_numpy() == pytest.approx(
        pairs.p_value.to_numpy(), rel=1e-3, abs=1e-6
    )


def test_asymptotic_df_match_emmeans(fits):
    name, _, _ = fits
    at_lme4 = mixed_model(load(name), theta=lme4_theta(name), df="asymptotic")
    pairs = oracle(name, "emmeans_pairs")
    pairs = pairs[(pairs.df_method == "asymptotic") & (pairs.adjust == "holm")]
    assert np.all(np.isinf(at_lme4.contrasts.df))
    close(at_lme4.contrasts.p_holm, pairs.p_value, 1e-8)
    means = oracle(name, "emmeans_means")
    means = means[means.df_method == "asymptotic"]
    close(at_lme4.emmean - 1.959963984540054 * at_lme4.emmean_se, means["lower.CL"], 1e-9)


# ---------------------------------------------------------------------- dense reference
def tiny_data(seed: int, prompts: bool, interaction: float = 0.0):
    """Unbalanced clustered Gaussian data with prompt variants, small enough for dense algebra."""
    rng = np.random.default_rng(seed)
    sizes = [3, 5, 4, 6, 2]
    g_mc = np.random.default_rng(seed + 1000).normal(scale=interaction, size=(len(sizes), 3))
    rows = []
    item = 0
    u = rng.normal(scale=0.5, size=len(sizes))
    g = rng.normal(scale=0.3, size=2)
    for c, size in enumerate(sizes):
        for _ in range(size):
            w = rng.normal(scale=0.8)
            for m, mu in enumerate([0.0, 0.3, 0.5]):
                for v in range(2 if prompts else 1):
                    if rng.random() < 0.15:
                        continue
                    y = mu + u[c] + w + (g[v] if prompts else 0) + g_mc[c, m] + rng.normal()
                    rows.append((f"m{m}", f"i{item:02d}", f"c{c}", f"p{v}", y))
            item += 1
    frame = pd.DataFrame(rows, columns=["model", "item", "cluster", "prompt", "score"])
    scores = rankci.Scores.from_frame(
        frame, cluster="cluster", prompt="prompt" if prompts else None, bounds=None
    )
    return frame, scores


def dense_pieces(frame: pd.DataFrame, prompts: bool, interaction: bool = False):
    """y, X and V_k = Z_k Z_k' in the order item, cluster, [model:cluster], [prompt], residual"""
    y = frame.score.to_numpy()
    x = pd.get_dummies(frame.model).to_numpy(float)
    terms = [pd.get_dummies(frame[c]).to_numpy(float) for c in ("item", "cluster")]
    if interaction:
        terms.append(pd.get_dummies(frame.model + ":" + frame.cluster).to_numpy(float))
    if prompts:
        terms.append(pd.get_dummies(frame.prompt).to_numpy(float))
    vs = [z @ z.T for z in terms] + [np.eye(len(y))]
    return y, x, vs


def dense_deviance(phi, y, x, vs):
    """-2 log L_REML with V = sum phi_k V_k, by dense linear algebra."""
    v = sum(p * vk for p, vk in zip(phi, vs, strict=True))
    vinv = np.linalg.inv(v)
    xtvx = x.T @ vinv @ x
    beta = np.linalg.solve(xtvx, x.T @ vinv @ y)
    r = y - x @ beta
    n, p = x.shape
    return (
        np.linalg.slogdet(v)[1]
        + np.linalg.slogdet(xtvx)[1]
        + r @ vinv @ r
        + (n - p) * np.log(2 * np.pi)
    )


def dense_satterthwaite(phi, y, x, vs, contrasts):
    """Satterthwaite df from the analytic observed REML Hessian in the variance parameters."""
    v = sum(p * vk for p, vk in zip(phi, vs, strict=True))
    vinv = np.linalg.inv(v)
    cov = np.linalg.inv(x.T @ vinv @ x)
    proj = vinv - vinv @ x @ cov @ x.T @ vinv
    py = proj @ y
    m = len(vs)
    hess = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            hess[i, j] = -np.trace(proj @ vs[i] @ proj @ vs[j]) + 2 * py @ vs[i] @ proj @ vs[j] @ py
    a = 2 * np.linalg.inv(hess)
    jac = [cov @ x.T @ vinv @ vk @ vinv @ x @ cov for vk in vs]
    var = np.einsum("ak,kl,al->a", contrasts, cov, contrasts)
    g = np.stack([np.einsum("ak,kl,al->a", contrasts, jk, contrasts) for jk in jac], axis=1)
    return var, 2 * var**2 / np.einsum("ap,pq,aq->a", g, a, g)


@pytest.mark.parametrize("prompts, interaction", [(True, False), (False, False), (True, True)])
def test_structured_reml_equals_dense_reml(prompts, interaction):
    # every variance estimate is inside (0, inf) for these data
    frame, scores = tiny_data(2, prompts, 0.6 if interaction else 0.0)
    y, x, vs = dense_pieces(frame, prompts, interaction)
    own = mixed_model(scores, random="model:cluster" if interaction else "cluster")
    assert own.formula.endswith("(1|prompt)") == prompts
    assert ("(1|model:cluster)" in own.formula) == interaction
    # the criterion at an arbitrary point
    design = reml.build_design(
        scores.score,
        scores.model_code,
        scores.item_code,
        scores.item_cluster,
        scores.prompt_code if prompts else None,
        scores.n_models,
        2 if prompts else 0,
        model_by_cluster=interaction,
    )
    theta = np.array([0.7, 0.4, 0.9, 0.5][: len(vs) - 1])
    sigma2 = 1.3
    crit = reml.reml_criterion(design, theta)
    profile = optimize.minimize_scalar(
        lambda s2: dense_deviance(np.append(theta**2 * s2, s2), y, x, vs),
        bounds=(0.01, 20),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert crit == pytest.approx(profile.fun, rel=1e-9)
    assert dense_deviance(np.append(theta**2 * sigma2, sigma2), y, x, vs) >= crit
    # the optimum, found independently on the dense criterion
    start = np.full(len(vs), 0.5)
    dense = optimize.minimize(
        lambda p: dense_deviance(np.exp(p), y, x, vs),
        np.log(start),
        method="BFGS",
        options={"gtol": 1e-9},
    )
    names = ["item", "cluster"] + (["model:cluster"] if interaction else [])
    names += ["prompt"] if prompts else []
    mine = np.array([own.variance_components[t] for t in names + ["residual"]])
    assert dense_deviance(mine, y, x, vs) == pytest.approx(own.reml_criterion, rel=1e-11)
    assert own.reml_criterion <= dense.fun + 1e-10  # at least as good as a dense optimiser
    assert mine == pytest.approx(np.exp(dense.x), rel=1e-3)
    step = 1e-5  # and a stationary point of the dense likelihood
    for i in range(len(mine)):
        e = np.zeros(len(mine))
        e[i] = step
        slope = (
            dense_deviance(mine * np.exp(e), y, x, vs) - dense_deviance(mine * np.exp(-e), y, x, vs)
        ) / (2 * step)
        assert abs(slope) < 1e-5
    # standard errors and Satterthwaite df from analytic derivatives at the same point
    k = scores.n_models
    j, l = np.triu_indices(k, 1)
    contrasts = np.zeros((len(j), k))
    contrasts[np.arange(len(j)), j] = 1
    contrasts[np.arange(len(j)), l] = -1
    var, df = dense_satterthwaite(mine, y, x, vs, contrasts)
    assert own.contrasts.se.to_numpy() == pytest.approx(np.sqrt(var), rel=1e-9)
    assert own.contrasts.df.to_numpy() == pytest.approx(df, rel=1e-5)
    var_m, df_m = dense_satterthwaite(mine, y, x, vs, np.eye(k))
    assert own.emmean_df == pytest.approx(df_m, rel=1e-5)


def test_boundary_fit_satisfies_the_kkt_conditions():
    """Data whose cluster variance is estimated as zero: the fit is the constrained optimum (no
    descent into the feasible region), and the result says so."""
    frame, scores = tiny_data(12, prompts=False)
    y, x, vs = dense_pieces(frame, prompts=False)
    own = mixed_model(scores)
    assert own.variance_components["cluster"] == 0.0 and "boundary" in own.notes
    mine = np.array([own.variance_components[t] for t in ("item", "cluster", "residual")])
    base = dense_deviance(mine, y, x, vs)
    assert base == pytest.approx(own.reml_criterion, rel=1e-11)
    for i, step in ((1, 1e-4), (0, 1e-4 * mine[0]), (2, 1e-4 * mine[2])):
        for sign in (1, -1):
            moved = mine.copy()
            moved[i] += sign * step
            if moved[i] >= 0:
                assert dense_deviance(moved, y, x, vs) >= base - 1e-9


# ---------------------------------------------------------------------- ranking, contracts
# the subject is that pairwise and ranking use the contrasts, not what they certify
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_mixed_pairwise_and_ranking_use_the_contrasts():
    scores = load("small")
    model = mixed_model(scores, theta=lme4_theta("small"))
    pw = model.pairwise()
    assert pw.test == "lmm"
    pairs = oracle("small", "emmeans_pairs")
    pairs = pairs[(pairs.df_method == "satterthwaite") & (pairs.adjust == "none")]
    index = {m: i for i, m in enumerate(model.models)}
    for row in pairs.itertuples():
        a, b = (index[s] for s in row.contrast.split(" - "))
        better, worse = (a, b) if row.estimate > 0 else (b, a)
        assert pw.pvalue[better, worse] == pytest.approx(row.p_value / 2, rel=1e-6)
        assert pw.pvalue[worse, better] == pytest.approx(1 - row.p_value / 2, rel=1e-6)
    ranking = mixed_ranking(model)
    assert ranking.procedure["test"] == "lmm" and "mixed model" in ranking.guarantee
    # m05 is certified first: each of its four one-sided p-values survives Holm over 20
    assert ranking.lower[index["m05"]] == ranking.upper[index["m05"]] == 1
    marginal = mixed_ranking(model, coverage="marginal")
    assert marginal.coverage == "marginal" and marginal.dominance is None
    assert marginal.guarantee.startswith("For each model separately")
    shifted = mixed_ranking(model, delta=0.2)
    assert shifted.dominance.sum() == 0  # no difference exceeds 0.2


def test_prompt_term_and_json_contract():
    frame, scores = tiny_data(3, prompts=True)
    model = mixed_model(scores)
    payload = json.loads(json.dumps(model.to_dict(), allow_nan=False))
    assert set(payload["variance_components"]) == {"cluster", "item", "prompt", "residual"}
    assert {"F", "df_num", "df_den", "p"} <= set(payload["model_test"])
    assert {"model", "emmean", "se"} <= set(payload["emmeans"][0])
    assert {"first", "second", "estimate", "se", "df", "p", "p_holm"} <= set(
        payload["contrasts"][0]
    )
    assert "MixedModel(" in repr(model)
    for table in ("emmeans", "contrasts", "fixed_effects", "variance_components"):
        assert len(model.to_frame(table)) > 0
    no_prompt = mixed_model(scores, prompt=False, random="item")
    assert no_prompt.formula == "score ~ model + (1|item)"


def test_bad_input_is_a_clear_error():
    scores = load("small")
    with pytest.raises(ValueError, match="df"):
        mixed_model(scores, df="kr")
    with pytest.raises(ValueError, match="theta needs 2"):
        mixed_model(scores, theta=[1.0])
    with pytest.raises(ValueError, match="same"):
        mixed_model(rankci.Scores.from_matrix(np.ones((4, 3))))
    with pytest.raises(ValueError, match="coverage"):
        mixed_ranking(scores, coverage="joint")


# a coverage study under the model: replications that certify nothing are expected
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_simultaneous_coverage_under_the_model():
    """Fast version of validation/mixed_study.py: Gaussian LMM data with two tied pairs; the
    simultaneous rank intervals from the contrasts contain every true rank in about 95 % of
    replications or more, and the Type-III test rejects a true null at about 5 %."""
    rng = np.random.default_rng(99)
    reps, k, clusters, per = 60, 4, 12, 8
    truth = np.array([0.0, 0.0, 0.3, 0.3])
    true_rank = 1 + (truth[None, :] > truth[:, None]).sum(1)
    covered = null_rejections = 0
    item_cluster = np.repeat(np.arange(clusters), per)
    for _ in range(reps):
        u = rng.normal(scale=0.5, size=clusters)[item_cluster]
        w = rng.normal(scale=0.7, size=clusters * per)
        y = truth + (u + w)[:, None] + rng.normal(size=(clusters * per, k))
        scores = rankci.Scores.from_matrix(
            y, clusters=[f"c{c:02d}" for c in item_cluster], bounds=None
        )
        ranking = mixed_ranking(scores, tukey=False)
        covered += np.all((ranking.lower <= true_rank) & (true_rank <= ranking.upper))
        null = rankci.Scores.from_matrix(
            y[:, :2] - truth[:2], bounds=None, clusters=[f"c{c:02d}" for c in item_cluster]
        )
        null_rejections += mixed_model(null, tukey=False).model_test["p"] <= 0.05
    assert covered >= reps - 8  # binomial(60, 0.95): expected misses 3
    assert null_rejections <= 9
    assert stats.binom.cdf(null_rejections, reps, 0.05) > 0.001


def test_random_names_the_one_choice_of_random_effects_and_refuses_others():
    scores = tiny_data(2, False, 0.0)[1]
    assert "(1|cluster)" in mixed_model(scores, random="cluster").formula
    only_items = mixed_model(scores, random="item").formula
    assert "(1|item)" in only_items and "cluster" not in only_items
    assert "(1|model:cluster)" in mixed_model(scores, random="model:cluster").formula
    with pytest.raises(ValueError, match="random"):
        mixed_model(scores, random="bogus")
    with pytest.raises(TypeError):  # the two booleans it replaced, before the first release
        mixed_model(scores, cluster=False)
