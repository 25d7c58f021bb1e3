"""Linear mixed model for many models on a shared, clustered question set.

``score ~ model + (1|cluster) + (1|cluster:item) [+ (1|prompt)]``, fitted by REML (Section 4 of
the source, "Statistical Methods for Multiple Language Model Comparison on a Shared Evaluation"):

    y_{m,c,i,v} = mu_m + u_c + w_{c:i} + g_v + e,    u ~ N(0, tau^2), w ~ N(0, sigma_q^2),
                                                     g ~ N(0, sigma_p^2), e ~ N(0, sigma^2).

``mu_m`` (the estimated marginal mean of model m) is what a leaderboard ranks; ``tau^2`` measures
how much questions of the same cluster (subject, passage, language) share, and ``sigma_q^2`` how
much a single question is easier or harder for every model. The fit works balanced or not (all
rows are used; nothing needs to be complete), by the structured REML of :mod:`rankci.mixed.reml`.

Inference, as lmerTest and emmeans report it:

* fixed effects in treatment coding (intercept = the first model), estimated marginal means and
  all pairwise contrasts ``mu_j - mu_l``, standard errors from ``Cov(mu) = sigma^2 (X'V^-1X)^-1``;
* Satterthwaite degrees of freedom, ``df = 2 (l'Cl)^2 / (g'Ag)`` with ``g_k = l' dC/dphi_k l`` and
  ``A = 2 H^-1`` the asymptotic covariance of ``phi = (theta, sigma)`` (H: Hessian of the REML
  deviance), or ``df = inf`` (``df="asymptotic"``);
* the Type-III F test of "all models equal", with lmerTest's multi-df Satterthwaite denominator df;
* pairwise p-values adjusted by Holm and Bonferroni (exact family-wise error control under any
  dependence, given valid per-contrast p-values) and by Tukey's studentized range, which is only
  an approximation here: Tukey's test is exact for balanced designs with i.i.d. errors, not for
  mixed models or unbalanced data (the source, Section 4).

:func:`mixed_ranking` turns the contrasts' one-sided p-values into rank intervals with the shared
counting code, so the intervals account for cluster and question effects.

References
----------
Bates, D., Maechler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects models using
lme4. Journal of Statistical Software 67(1).
Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in linear
mixed effects models. Journal of Statistical Software 82(13).
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
Biometrics Bulletin 2(6), 110-114.
Lenth, R. V. (2023). emmeans: Estimated Marginal Means. R package version 1.8.4.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import sparse, special

from rankci._base import check_alpha, check_choice, check_nonnegative, jsonable
from rankci.certify.holm import PROCEDURES, adjust_pvalues, certify_holm
from rankci.data import Scores
from rankci.evidence.pairwise import Pairwise
from rankci.evidence.studentized_range import tukey_pvalues
from rankci.io import as_scores
from rankci.leaderboard import apply_trials, resolve_spec
from rankci.method import MethodSpec
from rankci.mixed import reml
from rankci.mixed.kenward_roger import kenward_roger, kr_contrast_df, kr_ftest
from rankci.mixed.satterthwaite import satterthwaite_df, type3_contrast, type3_test
from rankci.ranking import Ranking
from rankci.trials import per_item_sentence

DF_METHODS = ("satterthwaite", "kenward-roger", "asymptotic")
#: the random effects of items and clusters (``mixed_model(random=)``): items only, items nested
#: in random clusters, and a random model-by-cluster effect besides
RANDOM_TERMS = ("cluster", "item", "model:cluster")

__all__ = ["DF_METHODS", "RANDOM_TERMS", "MixedModel", "mixed_model", "mixed_ranking"]


@dataclass(frozen=True, repr=False, eq=False)
class MixedModel:
    """A fitted ``score ~ model + (1|cluster) + (1|cluster:item) [+ (1|prompt)]``.

    Attributes
    ----------
    models : tuple of str
    formula : str
        The model in lme4 notation (terms that could not be fitted are left out; see ``notes``).
    variance_components : dict
        REML variances on the score scale: ``cluster`` (tau^2), ``item`` (question within cluster,
        sigma_q^2), ``model:cluster`` and ``prompt`` when fitted, and ``residual`` (sigma^2).
    emmean, emmean_se, emmean_df : ndarray (M,)
        Estimated marginal mean of each model, its standard error and degrees of freedom.
    cov : ndarray (M, M)
        Covariance of the estimated marginal means.
    model_test : dict
        Type-III F test of "every model has the same mean": F, df_num, df_den, p.
    fixed_effects : DataFrame
        Treatment coding as lme4 prints it: ``(Intercept)`` (the first model) and
        ``model<name>`` (difference to the first model); estimate, se, df, t, p.
    contrasts : DataFrame
        Every pair ``first - second`` (first listed before second): estimate, se, df, t, p,
        p_holm, p_bonferroni, p_tukey (approximate), lower, upper (unadjusted CI at 1 - alpha).
    df_method : {"satterthwaite", "kenward-roger", "asymptotic"}
        With ``"kenward-roger"``, ``emmean_se``, ``cov``, ``pair_se`` and the F test use
        Kenward-Roger's adjusted covariance Phi_A (:mod:`rankci.mixed.kenward_roger`).
    reml_criterion : float
        ``-2 log L_R`` at the optimum (lme4's ``REMLcrit``).
    theta : ndarray
        Relative standard deviations (item, [cluster], [prompt]) / sigma at the optimum.
    n_obs, n_items, n_clusters, n_prompts : int
    excluded : dict
        What was left out. The mixed model drops no row of the scores it is given: it uses items
        that not every model scored as they are (``rows_excluded`` is 0). Rows excluded when the
        table was read, by the one prompt-variant rule of every command
        (:data:`rankci.data.PROMPT_RULE`), are carried as ``inconsistent_prompts``, as in every
        other result's ``excluded``.
    notes : dict
        Optimiser report, parameters on the boundary, and why a term was left out.
    """

    models: tuple[str, ...]
    formula: str
    variance_components: dict
    emmean: np.ndarray
    emmean_se: np.ndarray
    emmean_df: np.ndarray
    cov: np.ndarray
    model_test: dict
    fixed_effects: pd.DataFrame
    contrasts: pd.DataFrame
    df_method: str
    reml_criterion: float
    theta: np.ndarray
    n_obs: int
    n_items: int
    n_clusters: int
    n_prompts: int
    alpha: float
    excluded: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    pair_se: np.ndarray | None = None
    pair_df: np.ndarray | None = None
    n_common: np.ndarray | None = None

    @property
    def n_models(self) -> int:
        return len(self.models)

    def to_frame(self, table: str = "emmeans") -> pd.DataFrame:
        """One of the result tables: ``"emmeans"`` (default), ``"contrasts"``,
        ``"fixed_effects"`` or ``"variance_components"``."""
        check_choice(
            "table", table, ("emmeans", "contrasts", "fixed_effects", "variance_components")
        )
        if table == "contrasts":
            return self.contrasts.copy()
        if table == "fixed_effects":
            return self.fixed_effects.copy()
        if table == "variance_components":
            total = sum(self.variance_components.values())
            return pd.DataFrame(
                {
                    "component": list(self.variance_components),
                    "variance": list(self.variance_components.values()),
                    "sd": np.sqrt(list(self.variance_components.values())),
                    "share": [v / total for v in self.variance_components.values()],
                }
            )
        return pd.DataFrame(
            {
                "model": list(self.models),
                "emmean": self.emmean,
                "se": self.emmean_se,
                "df": self.emmean_df,
            }
        )

    def to_dict(self) -> dict:
        """JSON-safe, following ``rankci omnibus --method mixed --format json``."""
        emmeans = [
            {"model": m, "emmean": e, "se": s, "df": d}
            for m, e, s, d in zip(
                self.models, self.emmean, self.emmean_se, self.emmean_df, strict=True
            )
        ]
        contrasts = self.contrasts.replace({np.nan: None}).to_dict(orient="records")
        fixed = self.fixed_effects.replace({np.nan: None}).to_dict(orient="records")
        return jsonable(
            {
                "method": "mixed",
                "formula": self.formula,
                # the three components of the documented schema are always present (None when
                # the term was not fitted, e.g. data without a cluster column)
                "variance_components": {
                    **dict.fromkeys(("cluster", "item", "residual")),
                    **self.variance_components,
                },
                "model_test": dict(self.model_test),
                "emmeans": emmeans,
                "contrasts": contrasts,
                "fixed_effects": fixed,
                "df_method": self.df_method,
                "alpha": self.alpha,
                "reml_criterion": self.reml_criterion,
                "theta": self.theta,
                "n_obs": self.n_obs,
                "n_items": self.n_items,
                "n_clusters": self.n_clusters,
                "n_prompts": self.n_prompts,
                "excluded": self.excluded,
                "notes": self.notes,
            }
        )

    def __repr__(self) -> str:
        vc = ", ".join(f"{k}={v:.4g}" for k, v in self.variance_components.items())
        t = self.model_test
        lines = [
            f"MixedModel({self.formula}; {self.n_obs} rows, {self.n_items} items, "
            f"{self.n_clusters} clusters, REML)",
            f"  variance components: {vc}",
            f"  model test: F({t['df_num']}, {t['df_den']:.1f}) = {t['F']:.4g}, p = {t['p']:.3g}",
            f"  {'model':<{self._width()}}  emmean      se",
        ]
        for m, e, s in zip(self.models, self.emmean, self.emmean_se, strict=True):
            lines.append(f"  {m:<{self._width()}}  {e:.4f}  {s:.4f}")
        return "\n".join(lines)

    def _width(self) -> int:
        return max(len("model"), *(len(m) for m in self.models))

    def pairwise(self, delta: float = 0.0) -> Pairwise:
        """One-sided evidence for every ordered pair from the mixed-model contrasts.

        ``H_jl: mu_j - mu_l <= delta`` is tested by ``t = (mu_j - mu_l - delta) / se`` against
        Student's t with the contrast's Satterthwaite df (the normal with ``df="asymptotic"``).
        The result feeds :func:`rankci.certify_holm`.
        """
        delta = check_nonnegative(delta, "delta")
        estimate = self.emmean[:, None] - self.emmean[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            statistic = (estimate - delta) / self.pair_se
        pvalue = special.stdtr(self.pair_df, -statistic)
        for matrix in (estimate, statistic, pvalue):
            np.fill_diagonal(matrix, np.nan)
        return Pairwise(
            models=self.models,
            test="lmm",
            delta=delta,
            estimate=estimate,
            statistic=statistic,
            pvalue=pvalue,
            n=self.n_common.copy(),
            se=self.pair_se.copy(),
            df=self.pair_df.copy(),
            unit="item",
            missing="available",
            options={"formula": self.formula, "df": self.df_method},
            excluded=dict(self.excluded),
            score=self.emmean.copy(),
            n_units=self.n_items,
        )


# ---------------------------------------------------------------------- fitting
def mixed_model(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    random: str = "cluster",
    prompt: bool = True,
    df: str = "satterthwaite",
    alpha: float = 0.05,
    tukey: bool = True,
    theta: np.ndarray | None = None,
) -> MixedModel:
    """Fit ``score ~ model + (1|cluster) + (1|cluster:item) [+ (1|prompt)]`` by REML.

    Parameters
    ----------
    data : Scores, DataFrame or path
        Long per-item scores; every row is used (designs may be unbalanced, models may miss
        items). Scores need not lie in [0, 1] for this method when given as Scores.
    random : {"cluster", "item", "model:cluster"}, default "cluster"
        The random effects of items and clusters (:data:`RANDOM_TERMS`). ``"cluster"``:
        ``(1|cluster) + (1|cluster:item)``, items nested in clusters, when the data have a cluster
        column with at least two clusters (else ``(1|item)``, with a note). ``"item"``:
        ``(1|item)`` only, clusters ignored. ``"model:cluster"``: also ``(1|model:cluster)``, each
        model's advantage may differ from cluster to cluster. Random cluster and question
        intercepts are shared by every model and cancel in contrasts, so without this term the
        contrasts' standard errors ignore how consistently a model wins across clusters; with it,
        they generalise to new clusters (see ``validation/README.md``, scenario D, and
        ``docs/omnibus.md``).
    prompt : bool, default True
        Include ``(1|prompt)`` when the data have a prompt column with at least two variants.
    df : {"satterthwaite", "kenward-roger", "asymptotic"}
        Degrees of freedom of t and F tests: Satterthwaite's (lmerTest's default),
        Kenward-Roger's (pbkrtest; adjusted covariance Phi_A, scaled F; not with the crossed
        ``(1|prompt)`` term), or infinite.
    alpha : float, default 0.05
        Level of the unadjusted confidence intervals in ``contrasts``.
    tukey : bool, default True
        Compute the (approximate) Tukey-adjusted p-values, all pairs at once by the vectorised
        :func:`rankci.evidence.studentized_range.studentized_range_sf` (issue 30: scipy's
        studentized range pair by pair, 7-30 ms each with finite df, took 99 % of the call).
        It agrees with an independent quadrature of scipy's range distribution over the chi
        density to 1e-9 relative, and with ``scipy.stats.studentized_range.sf`` to 1e-6
        relative for p > 1e-6 up to df = 2,000 (beyond, scipy's own integration is off by up
        to 1e-4 relative; tests/mixed/test_tukey_vectorised.py). ``False`` leaves ``p_tukey``
        as NaN.
    theta : array_like, optional
        Skip the optimisation and evaluate everything at these relative standard deviations
        (order: item, cluster, prompt, as in ``MixedModel.theta`` and lme4's ``getME(fit,
        "theta")``), for example to reproduce another program's fit exactly.

    Returns
    -------
    MixedModel

    References
    ----------
    Bates, D., Maechler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects models
    using lme4. Journal of Statistical Software 67(1), 1-48.
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13), 1-26.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    Biometrics Bulletin 2(6), 110-114.

    Examples
    --------
    >>> import rankci
    >>> fit = rankci.mixed_model(rankci.datasets.load_mmlu_pro())
    >>> sorted(fit.variance_components)
    ['cluster', 'item', 'residual']
    """
    scores = as_scores(data)
    check_choice("random", random, RANDOM_TERMS)
    check_choice("df", df, DF_METHODS)
    alpha = check_alpha(alpha)
    notes: dict = {}
    if "repeated_trials" in scores.notes:  # per-item scores from trials: the rule is recorded
        notes["repeated_trials"] = dict(scores.notes["repeated_trials"])
    y = scores.score
    if np.ptp(y) == 0:
        raise ValueError("every score is the same, so there is no variance to decompose")

    cluster = random != "item"
    use_cluster = cluster and scores.clusters is not None
    if use_cluster and len(scores.clusters) < 2:
        use_cluster = False
        notes["cluster"] = "left out: only one cluster"
    elif cluster and scores.clusters is None:
        notes["cluster"] = "left out: the data have no cluster column"
    use_prompt = bool(prompt) and scores.prompts is not None
    if use_prompt and len(scores.prompts) < 2:
        use_prompt = False
        notes["prompt"] = "left out: only one prompt variant"

    design = reml.build_design(
        y,
        scores.model_code,
        scores.item_code,
        scores.item_cluster if use_cluster else None,
        scores.prompt_code if use_prompt else None,
        scores.n_models,
        len(scores.prompts) if use_prompt else 0,
        model_by_cluster=random == "model:cluster" and use_cluster,
    )
    if design.n_obs - design.n_fixed < 1:
        raise ValueError(
            f"{design.n_obs} rows for {design.n_fixed} models leave no residual degrees of freedom"
        )
    if theta is not None:
        theta = np.asarray(theta, dtype=float).reshape(-1)
        if theta.size != len(design.terms) or not np.all(np.isfinite(theta)):
            raise ValueError(
                f"theta needs {len(design.terms)} finite values ({', '.join(design.terms)}), "
                f"got {theta.tolist()}"
            )
    with _small_blas(design.r):
        fit = reml.fit_reml(design, theta=theta)
        kr = None
        if df == "kenward-roger":
            kr = kenward_roger(
                scores.model_code,
                scores.item_code,
                scores.item_cluster[scores.item_code] if "cluster" in design.terms else None,
                scores.n_models,
                fit.variances,
            )
        return _summarise(scores, design, fit, df, alpha, notes, bool(tukey), kr)


#: below this size of the dense block (prompts + models) the fit runs its BLAS on one thread
_ONE_THREAD_BELOW = 1024


def _small_blas(size: int) -> contextlib.AbstractContextManager:
    """One BLAS thread for the fit's small dense algebra (threadpoolctl, a dependency).

    The fit makes a few hundred Cholesky factorisations of a (P + K) x (P + K) matrix. On a busy
    machine a multi-threaded BLAS waits for its threads on each of them: with 200 models at load
    average 9 on 2 cores a 200 x 200 factorisation took 50 ms instead of 0.2 ms, and the fit 55 s
    instead of 0.65 s. The result is the same either way; only the waiting goes.
    """
    if size >= _ONE_THREAD_BELOW:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits  # imported here: only fits need it

    return threadpool_limits(limits=1, user_api="blas")


def _formula(terms: tuple[str, ...]) -> str:
    parts = ["score ~ model"]
    if "cluster" in terms:
        parts += ["(1|cluster)", "(1|cluster:item)"]
    else:
        parts.append("(1|item)")
    if "model:cluster" in terms:
        parts.append("(1|model:cluster)")
    if "prompt" in terms:
        parts.append("(1|prompt)")
    return " + ".join(parts)


def _summarise(scores, design, fit, df_method, alpha, notes, tukey, kr=None) -> MixedModel:
    k = scores.n_models
    models = scores.models
    mu, cov = fit.beta, fit.cov_beta
    asymptotic = df_method == "asymptotic"

    def satterthwaite(var: np.ndarray, grad: np.ndarray) -> np.ndarray:
        if asymptotic or kr is not None:  # Kenward-Roger's df are set below
            return np.full(var.shape, np.inf)
        return satterthwaite_df(var, grad, fit.vcov_varpar)

    if kr is not None:  # its SEs come from the adjusted covariance Phi_A
        cov = kr.phi_a

    jac = fit.jacobian
    diag_cov = np.diag(cov).copy()
    diag_jac = np.einsum("pkk->pk", jac)
    emmean_df = satterthwaite(diag_cov, diag_jac)
    emmean_se = np.sqrt(diag_cov)

    pair_var = diag_cov[:, None] + diag_cov[None, :] - 2.0 * cov
    pair_grad = diag_jac[:, :, None] + diag_jac[:, None, :] - 2.0 * jac
    pair_df = satterthwaite(pair_var, pair_grad)
    counts = np.diag(design.ww)[design.n_prompts :]
    if kr is not None:
        emmean_df = kr_contrast_df(kr, np.eye(k))
        left, right = np.triu_indices(k, 1)
        pair_l = np.zeros((left.size, k))
        pair_l[np.arange(left.size), left] = 1.0
        pair_l[np.arange(left.size), right] = -1.0
        pair_df = np.full((k, k), np.nan)
        pair_df[left, right] = pair_df[right, left] = kr_contrast_df(kr, pair_l)
        model_test = kr_ftest(kr, type3_contrast(counts), mu)
    else:
        model_test = type3_test(counts, mu, cov, jac, fit.vcov_varpar, asymptotic)
    pair_se = np.sqrt(np.maximum(pair_var, 0.0))
    np.fill_diagonal(pair_se, np.nan)
    np.fill_diagonal(pair_df, np.nan)

    contrasts = _contrast_table(models, mu, pair_se, pair_df, alpha, tukey)
    fixed = _fixed_effects(models, mu, diag_cov, emmean_df, pair_se, pair_df)
    if fit.boundary:
        notes["boundary"] = (
            f"variance of {', '.join(fit.boundary)} estimated as zero (boundary fit); "
            "Satterthwaite df are less reliable there"
        )
    notes["optimizer"] = {
        "converged": fit.converged,
        "message": fit.message,
        "evaluations": fit.n_evaluations,
        "max_abs_gradient": float(np.max(np.abs(fit.gradient))),
    }
    notes["reference_level"] = models[0]
    variances = fit.variances
    order = [t for t in ("cluster", "item", "model:cluster", "prompt") if t in variances]
    order.append("residual")
    present = np.zeros((scores.n_items, k), dtype=bool)
    present[scores.item_code, scores.model_code] = True
    common = sparse.csr_matrix(present.astype(np.float64))
    n_common = np.asarray((common.T @ common).todense()).round().astype(np.int64)
    return MixedModel(
        models=models,
        formula=_formula(design.terms),
        variance_components={t: variances[t] for t in order},
        emmean=mu.copy(),
        emmean_se=emmean_se,
        emmean_df=emmean_df,
        cov=cov,
        model_test=model_test,
        fixed_effects=fixed,
        contrasts=contrasts,
        df_method=df_method,
        reml_criterion=fit.reml_criterion,
        theta=fit.theta.copy(),
        n_obs=design.n_obs,
        n_items=scores.n_items,
        n_clusters=design.n_clusters,
        n_prompts=design.n_prompts,
        alpha=alpha,
        excluded=_excluded(scores),
        notes=notes,
        pair_se=pair_se,
        pair_df=pair_df,
        n_common=n_common,
    )


def _excluded(scores: Scores) -> dict:
    """The mixed model's ``excluded``: no row dropped by the fit itself, plus what the reading
    excluded (:data:`rankci.data.PROMPT_RULE`), as :meth:`rankci.Scores.units` reports it."""
    excluded: dict = {"rows_excluded": 0, "reason": "none; the mixed model uses every row"}
    for key, value in scores.notes.get("excluded", {}).items():
        excluded[key] = dict(value) if isinstance(value, dict) else value
    if "inconsistent_prompts" in excluded:
        excluded["reason"] = (
            "none by the fit, which uses every row read; the rows of "
            f"{excluded['inconsistent_prompts']['reason']} were excluded when the table was read "
            "(inconsistent_prompts)"
        )
    return excluded


def _two_sided(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    return 2.0 * special.stdtr(df, -np.abs(t))


def _contrast_table(models, mu, pair_se, pair_df, alpha, tukey) -> pd.DataFrame:
    k = len(models)
    j, l = np.triu_indices(k, 1)
    estimate = mu[j] - mu[l]
    se, df = pair_se[j, l], pair_df[j, l]
    t = estimate / se
    p = _two_sided(t, df)
    quantile = -special.stdtrit(df, alpha / 2.0)
    names = np.asarray(models, dtype=object)
    return pd.DataFrame(
        {
            "first": names[j],
            "second": names[l],
            "estimate": estimate,
            "se": se,
            "df": df,
            "t": t,
            "p": p,
            "p_holm": adjust_pvalues(p, "holm"),
            "p_bonferroni": adjust_pvalues(p, "bonferroni"),
            "p_tukey": (
                tukey_pvalues(t, k, df, backend="vectorised") if tukey else np.full(t.shape, np.nan)
            ),
            "lower": estimate - quantile * se,
            "upper": estimate + quantile * se,
        }
    )


def _fixed_effects(models, mu, diag_cov, emmean_df, pair_se, pair_df) -> pd.DataFrame:
    names = ["(Intercept)"] + [f"model{m}" for m in models[1:]]
    estimate = np.concatenate([[mu[0]], mu[1:] - mu[0]])
    se = np.concatenate([[np.sqrt(diag_cov[0])], pair_se[1:, 0]])
    df = np.concatenate([[emmean_df[0]], pair_df[1:, 0]])
    t = estimate / se
    return pd.DataFrame(
        {"term": names, "estimate": estimate, "se": se, "df": df, "t": t, "p": _two_sided(t, df)}
    )


# ---------------------------------------------------------------------- ranking
def mixed_ranking(
    data: MixedModel | Scores | pd.DataFrame | str | os.PathLike,
    *,
    alpha: float = 0.05,
    coverage: str = "simultaneous",
    multiplicity: str = "holm",
    delta: float = 0.0,
    spec: MethodSpec | None = None,
    **fit_options,
) -> Ranking:
    """Rank intervals from the mixed model's contrasts (cluster and question effects included).

    The one-sided p-values of ``H_jl: mu_j - mu_l <= delta`` (:meth:`MixedModel.pairwise`) go to
    the shared ranking code: Holm (or Bonferroni) over all M(M-1) ordered pairs for
    ``coverage="simultaneous"``, per-model families at alpha/2 for ``"marginal"``.

    The guarantee is model-based: it holds to the extent that the linear mixed model describes
    the scores (exchangeable questions within a cluster, normal random effects) and the
    Satterthwaite t reference is accurate, which needs a fair number of clusters.

    Parameters
    ----------
    data : MixedModel, or data for :func:`mixed_model`
    alpha : float, default 0.05
    coverage : {"simultaneous", "marginal"}
    multiplicity : {"holm", "bonferroni"}
    delta : float, default 0
        Indifference margin on the score scale.
    spec : MethodSpec, optional
        The method at once (alpha, coverage, multiplicity, delta), for example
        ``ranking.spec``; then pass none of those keywords. Its test is ``"t"`` (the contrasts'
        t tests); the model's own settings stay in ``**fit_options``.
    **fit_options
        Passed to :func:`mixed_model` when ``data`` is not already a fitted model.

    Returns
    -------
    Ranking
        Rank intervals with the mixed model's contrasts as the evidence; ``ranking.spec`` is
        the validated :class:`~rankci.method.MethodSpec`.

    References
    ----------
    Bates, D., Maechler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects models
    using lme4. Journal of Statistical Software 67(1), 1-48.
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13), 1-26.
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.

    Examples
    --------
    >>> import rankci
    >>> ranking = rankci.mixed_ranking(rankci.datasets.load_mmlu_pro())
    >>> frame = ranking.to_frame()
    >>> bool((frame["rank_lower"] <= frame["rank_upper"]).all())
    True
    """
    keywords = dict(alpha=alpha, coverage=coverage, multiplicity=multiplicity, delta=delta)
    spec, _ = resolve_spec(spec, None, keywords, {}, "mixed_ranking", accepted=_KEYWORDS)
    check_choice("multiplicity", spec.multiplicity, PROCEDURES)
    if spec.test not in ("t", "auto"):  # auto: the contrasts are not 0/1 units, so the t
        raise ValueError(
            f"mixed_ranking tests the mixed model's contrasts by t tests: the spec's test must be "
            f"'t' (or 'auto', which is the t here), got {spec.test!r}"
        )
    alpha, coverage, multiplicity, delta = spec.alpha, spec.coverage, spec.multiplicity, spec.delta
    if isinstance(data, MixedModel):
        model = data
        fitted = model.notes.get("repeated_trials", {}).get("per_item")
        if spec.trials is not None and spec.trials != fitted:
            raise ValueError(
                f"mixed_ranking(): the spec's trials={spec.trials!r}, but this MixedModel was "
                + (f"fitted to per-item {fitted} scores" if fitted else "fitted without trials")
                + "; pass the scores (or table) instead of the fitted model to re-score them"
            )
        spec = spec.replace(trials=fitted)
    else:
        spec, scores = apply_trials(spec, as_scores(data), "mixed_ranking")
        model = mixed_model(scores, **fit_options)
    pairwise = model.pairwise(delta)
    ranking = certify_holm(pairwise, alpha, coverage, multiplicity).ranking()
    margin = f" with indifference margin {delta:g}" if delta > 0 else ""
    evidence = (
        f"{multiplicity.capitalize()} over one-sided t tests{margin} of the contrasts of the "
        f"linear mixed model {model.formula} ({model.df_method} df; {model.n_obs} rows, "
        f"{model.n_items} items, {model.n_clusters} clusters). The guarantee is model-based "
        "(exchangeable questions within clusters, normal random effects, accurate df); "
        "inference extends to new "
        + ("clusters and questions" if model.n_clusters else "questions")
        + " like these"
    )
    if coverage == "simultaneous":
        words = (
            f"With probability at least {1 - alpha:.0%}, every rank interval, certified "
            f"dominance and tier is true simultaneously ({evidence})."
        )
    else:
        words = (
            f"For each model separately, its rank interval contains its true rank with "
            f"probability at least {1 - alpha:.0%}; the intervals are not simultaneous "
            f"({evidence})."
        )
    procedure = dict(ranking.procedure)
    procedure["model"] = model.formula
    procedure["df"] = model.df_method
    details = ranking.details
    trials = model.notes.get("repeated_trials")
    if trials:
        words = words + " " + per_item_sentence(trials)
        details = {**details, "repeated_trials": jsonable(trials)}
    return replace(ranking, guarantee=words, procedure=procedure, spec=spec, details=details)


#: the keywords of mixed_ranking, for the message on an unknown one
_KEYWORDS = "data, alpha, coverage, multiplicity, delta, spec, and mixed_model's"
