"""Omnibus tests for K > 2 models on a shared question set, and their post-hoc procedures.

Questions are the repeated-measures unit and the model is the within-question factor (Section 2
of the source, "Statistical Methods for Multiple Language Model Comparison on a Shared
Evaluation"). Both tests use the items scored by every model (complete cases); the items left out
are counted in ``excluded``. With prompt variants, an item's score is its mean over prompts.

* :func:`rm_anova` -- one-way repeated-measures ANOVA: ``F = MS_model / MS_error`` on
  (k - 1, (n - 1)(k - 1)) df, partial and generalised eta^2, Mauchly's test of sphericity and the
  Greenhouse-Geisser and Huynh-Feldt corrections (as R's ``car::Anova`` computes them).
* :func:`friedman` -- Friedman's rank test with the tie correction, Kendall's W and the
  Iman-Davenport F.

The post-hoc procedures (Tukey HSD after RM-ANOVA, Nemenyi after Friedman) are in
:mod:`rankci.analyses.posthoc`.

References
----------
Greenhouse, S. W. and Geisser, S. (1959). On methods in the analysis of profile data.
Psychometrika 24, 95-112.
Huynh, H. and Feldt, L. S. (1976). Estimation of the Box correction for degrees of freedom from
sample data in randomized block and split-plot designs. Journal of Educational Statistics 1, 69-82.
Mauchly, J. W. (1940). Significance test for sphericity of a normal n-variate distribution.
Annals of Mathematical Statistics 11, 204-209.
Olejnik, S. and Algina, J. (2003). Generalized eta and omega squared statistics. Psychological
Methods 8(4), 434-447.
Friedman, M. (1937). The use of ranks to avoid the assumption of normality implicit in the analysis
of variance. JASA 32, 675-701.
Iman, R. L. and Davenport, J. M. (1980). Approximations of the critical region of the Friedman
statistic. Communications in Statistics A 9, 571-595.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from rankci._base import jsonable
from rankci.data import Scores, UnitScores
from rankci.io import as_scores

__all__ = ["Data", "Friedman", "RMAnova", "complete_units", "friedman", "rm_anova"]

Data = Scores | UnitScores | pd.DataFrame | str | os.PathLike


def complete_units(data: Data) -> UnitScores:
    """Items x models matrix of complete cases (item-level units), as the omnibus tests use it.

    The items not scored by every model are left out and counted in ``excluded``; a
    :class:`UnitScores` is used as given (it must have no missing value).
    """
    if isinstance(data, UnitScores):
        if np.isnan(data.values).any():
            raise ValueError(
                "omnibus tests need a score for every model on every unit; build the units "
                "with missing='complete'"
            )
        units = data
    else:
        units = as_scores(data).units("item", "complete")
    if units.n_units < 2:
        raise ValueError(f"omnibus tests need at least 2 complete items, got {units.n_units}")
    if units.n_models < 2:
        raise ValueError("omnibus tests need at least 2 models")
    return units


def _orthonormal_contrasts(k: int) -> np.ndarray:
    """k x (k - 1) normalised Helmert contrasts: orthonormal columns orthogonal to 1."""
    j = np.arange(1, k)
    c = np.zeros((k, k - 1))
    upper = np.arange(k)[:, None] < j[None, :]
    c[upper] = np.broadcast_to(1.0 / np.sqrt(j * (j + 1.0)), (k, k - 1))[upper]
    c[j, j - 1] = -j / np.sqrt(j * (j + 1.0))
    return c


# ---------------------------------------------------------------------- RM-ANOVA
#: up to this many models T = C'SC is formed from the k x k cross-product (O(n k^2 + k^3));
#: beyond it, _contrast_traces (O(n k min(n, k))), which agrees to rounding (about 1e-12)
_DIRECT_MAX_MODELS = 400


def _helmert_apply(centred: np.ndarray) -> np.ndarray:
    """``Y_c C`` for the normalised Helmert contrasts C of :func:`_orthonormal_contrasts`, in
    O(n k): column j is ``(sum_{l<j} y_l - j y_j) / sqrt(j (j + 1))``, j = 1..k-1."""
    k = centred.shape[1]
    j = np.arange(1, k, dtype=float)
    partial = np.cumsum(centred[:, :-1], axis=1)
    return (partial - j * centred[:, 1:]) / np.sqrt(j * (j + 1.0))


def _contrast_traces(centred: np.ndarray, need_t: bool) -> tuple[np.ndarray | None, float, float]:
    """``tr T`` and ``tr T^2`` for ``T = A'A``, ``A = Y_c C`` (n x (k-1)), without the k x k
    products: ``tr T = ||A||_F^2`` and ``tr T^2 = ||A'A||_F^2 = ||AA'||_F^2``, through the
    smaller of the two Gram matrices. T itself (for Mauchly's determinant) only if ``need_t``."""
    a = _helmert_apply(centred)
    ss_error = float(max(np.einsum("ij,ij->", a, a), 0.0))
    if need_t:
        t_mat = a.T @ a
        return t_mat, ss_error, float(np.sum(t_mat * t_mat))
    gram = a @ a.T
    return None, ss_error, float(np.sum(gram * gram))


@dataclass(frozen=True, repr=False, eq=False)
class RMAnova:
    """One-way repeated-measures ANOVA (items = subjects, model = within factor).

    Attributes
    ----------
    models : tuple of str
    means : ndarray (k,)
        Each model's mean over the complete items.
    se : ndarray (k,)
        Each model's standard error over the same items, ``sd_j / sqrt(n)`` (sample SD with
        n - 1), to report beside the F as the multi-model comparison seed asks (its Sec. 6:
        "report the F statistic alongside per-model means and SEs"; Miller 2024, Eq. 2).
    F, df_num, df_den, p : float
        ``F = [SS_model / (k-1)] / [SS_error / ((n-1)(k-1))]`` and its p-value.
    ss_model, ss_items, ss_error : float
        ``n sum_j (m_j - m)^2``, ``k sum_i (m_i - m)^2`` and the item x model interaction SS.
    eta2_partial, eta2_generalized : float
        ``SS_model / (SS_model + SS_error)`` and ``SS_model / (SS_model + SS_items + SS_error)``.
    mauchly_w, mauchly_chi2, mauchly_df, mauchly_p : float
        Mauchly's sphericity test (NaN when there are fewer items than models).
    gg_epsilon, hf_epsilon : float
        Greenhouse-Geisser and Huynh-Feldt epsilons (HF is reported uncapped, as car does).
    p_gg, p_hf : float
        p-values with both df multiplied by epsilon (HF capped at 1).
    n_items : int
        Complete items used.
    excluded : dict
    """

    models: tuple[str, ...]
    means: np.ndarray
    se: np.ndarray
    F: float
    df_num: float
    df_den: float
    p: float
    ss_model: float
    ss_items: float
    ss_error: float
    eta2_partial: float
    eta2_generalized: float
    mauchly_w: float
    mauchly_chi2: float
    mauchly_df: float
    mauchly_p: float
    gg_epsilon: float
    hf_epsilon: float
    p_gg: float
    p_hf: float
    n_items: int
    excluded: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def ms_error(self) -> float:
        return self.ss_error / self.df_den

    def to_frame(self) -> pd.DataFrame:
        """The ANOVA table: model, items and error rows."""
        df_items = self.n_items - 1
        return pd.DataFrame(
            {
                "source": ["model", "items", "error"],
                "SS": [self.ss_model, self.ss_items, self.ss_error],
                "df": [self.df_num, df_items, self.df_den],
                "MS": [self.ss_model / self.df_num, self.ss_items / df_items, self.ms_error],
                "F": [self.F, np.nan, np.nan],
                "p": [self.p, np.nan, np.nan],
                "p_GG": [self.p_gg, np.nan, np.nan],
                "p_HF": [self.p_hf, np.nan, np.nan],
            }
        )

    def to_dict(self) -> dict:
        """JSON-safe, following ``rankci omnibus --method anova --format json``."""
        keys = (
            "F",
            "df_num",
            "df_den",
            "p",
            "gg_epsilon",
            "hf_epsilon",
            "n_items",
            "p_gg",
            "p_hf",
            "eta2_partial",
            "eta2_generalized",
            "mauchly_w",
            "mauchly_chi2",
            "mauchly_df",
            "mauchly_p",
            "ss_model",
            "ss_items",
            "ss_error",
        )
        out = {"method": "anova", **{k: getattr(self, k) for k in keys}}
        out["n_models"] = self.n_models
        means = zip(self.models, self.means, self.se, strict=True)
        out["means"] = [{"model": m, "mean": x, "se": e} for m, x, e in means]
        out["excluded"] = self.excluded
        if self.notes:
            out["notes"] = self.notes
        return jsonable(out)

    def __repr__(self) -> str:
        return (
            f"RMAnova(F({self.df_num:g}, {self.df_den:g}) = {self.F:.4g}, p = {self.p:.3g}; "
            f"GG eps = {self.gg_epsilon:.4f} (p = {self.p_gg:.3g}), HF eps = "
            f"{self.hf_epsilon:.4f} (p = {self.p_hf:.3g}); Mauchly W = {self.mauchly_w:.4g}, "
            f"p = {self.mauchly_p:.3g}; partial eta2 = {self.eta2_partial:.4g}, generalized eta2 "
            f"= {self.eta2_generalized:.4g}; {self.n_items} items, {self.n_models} models)"
        )

    def _repr_html_(self) -> str:
        """Jupyter: the means and the test, with what it guarantees in one sentence."""
        import html

        frame = pd.DataFrame({"model": list(self.models), "mean": self.means, "se": self.se})
        table = frame.to_html(index=False, border=0, float_format=lambda v: f"{v:.4f}")
        head = (
            f"Repeated-measures ANOVA: F({self.df_num:g}, {self.df_den:g}) = {self.F:.4g}, "
            f"p = {self.p:.3g} (Greenhouse-Geisser p = {self.p_gg:.3g}); {self.n_items} "
            f"items, {self.n_models} models"
        )
        note = (
            "The p-value tests that all models have the same mean score (its type I error is "
            "at most alpha, under sphericity; the Greenhouse-Geisser p without it); it says "
            "nothing about which models differ."
        )
        return (
            f"<div><p><b>{html.escape(head)}</b></p>{table}"
            f"<p><small>{html.escape(note)}</small></p></div>"
        )


def rm_anova(data: Data) -> RMAnova:
    """One-way repeated-measures ANOVA with sphericity diagnostics and corrections.

    With ``Y`` the n x k matrix of complete items, ``S = Y_c'Y_c`` its centred cross-product matrix
    and ``C`` k x (k-1) orthonormal contrasts, ``T = C'SC``; then ``SS_error = tr T``,
    ``GG = (tr T)^2 / ((k-1) tr T^2)``, ``HF = (n (k-1) GG - 2) / ((k-1)(n - 1 - (k-1) GG))``, and
    Mauchly's ``W = det T / (tr T / (k-1))^(k-1)`` with Box's chi-square approximation and its
    second-order correction (as R's ``car``/``stats`` compute them).

    Parameters
    ----------
    data : Scores, UnitScores, DataFrame or path
        Items scored by every model are used; the others are counted in ``excluded``.

    Returns
    -------
    RMAnova
        The F test with uncorrected, Greenhouse-Geisser and Huynh-Feldt degrees of freedom,
        Mauchly's sphericity test and the effect sizes.

    References
    ----------
    Greenhouse, S. W. and Geisser, S. (1959). On methods in the analysis of profile data.
    Psychometrika 24(2), 95-112.
    Huynh, H. and Feldt, L. S. (1976). Estimation of the Box correction for degrees of freedom from
    sample data in randomized block and split-plot designs. Journal of Educational Statistics 1(1),
    69-82.
    Mauchly, J. W. (1940). Significance test for sphericity of a normal n-variate distribution.
    Annals of Mathematical Statistics 11(2), 204-209.
    Olejnik, S. and Algina, J. (2003). Generalized eta and omega squared statistics: measures of
    effect size for some common research designs. Psychological Methods 8(4), 434-447.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> y = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 0], [1, 1, 0]])
    >>> round(rm_anova(Scores.from_matrix(y)).F, 4)
    1.5556
    """
    units = complete_units(data)
    y = units.values
    n, k = y.shape
    grand = float(y.mean())
    means = y.mean(axis=0)
    item_means = y.mean(axis=1)
    ss_model = float(n * np.sum((means - grand) ** 2))
    ss_items = float(k * np.sum((item_means - grand) ** 2))
    centred = y - means
    p_dim = k - 1
    error_df = n - 1
    if k <= _DIRECT_MAX_MODELS:  # T itself, as always (the same floats as before)
        ssd = centred.T @ centred
        contrasts = _orthonormal_contrasts(k)
        t_mat = contrasts.T @ ssd @ contrasts
        ss_error = float(max(np.trace(t_mat), 0.0))
        tr2 = float(np.sum(t_mat * t_mat))
    else:  # many models: traces through A = Y_c C, and T = A'A only when Mauchly needs it
        t_mat, ss_error, tr2 = _contrast_traces(centred, need_t=error_df > p_dim)
    df_num, df_den = float(p_dim), float((n - 1) * p_dim)
    if ss_error <= 1e-12 * max(ss_model + ss_items, 1e-300):
        if ss_model == 0:
            raise ValueError("every model has the same score on every item; nothing to test")
        f_value, p_value = np.inf, 0.0
    else:
        f_value = (ss_model / df_num) / (ss_error / df_den)
        p_value = float(stats.f.sf(f_value, df_num, df_den))

    # Greenhouse-Geisser and Huynh-Feldt (car: GG from the positive eigenvalues of T)
    gg = ss_error**2 / (p_dim * tr2) if p_dim >= 2 and tr2 > 0 else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        hf = ((error_df + 1) * p_dim * gg - 2) / (p_dim * (error_df - p_dim * gg))
    if not np.isfinite(f_value):
        p_gg = p_hf = p_value
    else:
        p_gg = float(stats.f.sf(f_value, df_num * gg, df_den * gg))
        hf_used = min(hf, 1.0)
        p_hf = float(stats.f.sf(f_value, df_num * hf_used, df_den * hf_used))

    w, chi2, mdf, mp = _mauchly(t_mat, error_df, p_dim)
    notes = {}
    if not np.isfinite(w):
        notes["mauchly"] = (
            f"Mauchly's test is not defined here: it needs more items than models - 1 (an error "
            f"df of {error_df} against {p_dim} contrasts)"
            if error_df <= p_dim
            else "Mauchly's test is not defined here: the covariance of the model contrasts is "
            "singular (some differences between models are constant or collinear)"
        ) + "; the Greenhouse-Geisser and Huynh-Feldt corrections do not need it"
    total = ss_model + ss_items + ss_error
    return RMAnova(
        models=units.models,
        se=y.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(k, np.nan),
        means=means,
        F=float(f_value),
        df_num=df_num,
        df_den=df_den,
        p=p_value,
        ss_model=ss_model,
        ss_items=ss_items,
        ss_error=ss_error,
        eta2_partial=ss_model / (ss_model + ss_error),
        eta2_generalized=ss_model / total,
        mauchly_w=w,
        mauchly_chi2=chi2,
        mauchly_df=mdf,
        mauchly_p=mp,
        gg_epsilon=float(gg),
        hf_epsilon=float(hf),
        p_gg=p_gg,
        p_hf=p_hf,
        n_items=n,
        excluded=dict(units.excluded),
        notes=notes,
    )


def _mauchly(t_mat: np.ndarray | None, df: int, p: int) -> tuple[float, float, float, float]:
    """Mauchly's W and p: Box's chi-square approximation with Anderson's second-order term w2.

    Matches R's ``stats::mauchly.test`` / ``car``, whose w2 has ``3 k`` (k = number of models)
    where Anderson (1958, Sec. 10.7) has ``3 p`` (p = k - 1); the difference is in the
    second-order term only (about 1e-7 of the p-value on the oracle data). With no more items
    than contrasts (``df <= p``) T is singular and W undefined, so its determinant is not taken.
    """
    if p < 2:
        return 1.0, 0.0, 0.0, 1.0
    if df <= p or t_mat is None:
        return np.nan, np.nan, np.nan, np.nan
    sign, logdet = np.linalg.slogdet(t_mat)
    if sign <= 0:
        return np.nan, np.nan, np.nan, np.nan
    log_w = logdet - p * np.log(np.trace(t_mat) / p)
    rho = 1.0 - (2.0 * p**2 + p + 2.0) / (6.0 * p * df)
    w2 = (
        (p + 2.0)
        * (p - 1.0)
        * (p - 2.0)
        * (2.0 * p**3 + 6.0 * p**2 + 3.0 * (p + 1.0) + 2.0)
        / (288.0 * (df * p * rho) ** 2)
    )
    z = -df * rho * log_w
    f = p * (p + 1.0) / 2.0 - 1.0
    pr1 = stats.chi2.sf(z, f)
    pr2 = stats.chi2.sf(z, f + 4.0)
    return float(np.exp(log_w)), float(z), float(f), float(pr1 + w2 * (pr2 - pr1))


# ---------------------------------------------------------------------- Friedman
@dataclass(frozen=True, repr=False, eq=False)
class Friedman:
    """Friedman's rank test, Kendall's W and the Iman-Davenport F.

    Attributes
    ----------
    models : tuple of str
    mean_ranks : ndarray (k,)
        Mean within-item rank of each model (1 = lowest score; ties share the average rank).
    chi2, df, p : float
        ``chi2 = 12 sum_j (R_j - n(k+1)/2)^2 / (n k (k+1) - sum(t^3 - t)/(k-1))`` on k - 1 df.
    kendall_w : float
        ``chi2 / (n (k - 1))``.
    iman_davenport, id_df_num, id_df_den, p_iman_davenport : float
        ``F = (n - 1) chi2 / (n (k - 1) - chi2)`` on (k - 1, (k - 1)(n - 1)) df.
    ties : float
        ``sum (t^3 - t)`` over the tie groups of every item.
    n_items : int
    excluded : dict
    """

    models: tuple[str, ...]
    mean_ranks: np.ndarray
    chi2: float
    df: float
    p: float
    kendall_w: float
    iman_davenport: float
    id_df_num: float
    id_df_den: float
    p_iman_davenport: float
    ties: float
    n_items: int
    excluded: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def to_frame(self) -> pd.DataFrame:
        """One row per model: mean rank and rank sum."""
        return pd.DataFrame(
            {
                "model": list(self.models),
                "mean_rank": self.mean_ranks,
                "rank_sum": self.mean_ranks * self.n_items,
            }
        )

    def to_dict(self) -> dict:
        """JSON-safe, following ``rankci omnibus --method friedman --format json``."""
        out = {
            "method": "friedman",
            "chi2": self.chi2,
            "df": self.df,
            "p": self.p,
            "kendall_w": self.kendall_w,
            "iman_davenport": {
                "F": self.iman_davenport,
                "df_num": self.id_df_num,
                "df_den": self.id_df_den,
                "p": self.p_iman_davenport,
            },
            "n_items": self.n_items,
            "n_models": self.n_models,
            "ties": self.ties,
            "mean_ranks": [
                {"model": m, "mean_rank": r}
                for m, r in zip(self.models, self.mean_ranks, strict=True)
            ],
            "excluded": self.excluded,
        }
        return jsonable(out)

    def __repr__(self) -> str:
        return (
            f"Friedman(chi2({self.df:g}) = {self.chi2:.4g}, p = {self.p:.3g}; Kendall W = "
            f"{self.kendall_w:.4g}; Iman-Davenport F({self.id_df_num:g}, {self.id_df_den:g}) = "
            f"{self.iman_davenport:.4g}, p = {self.p_iman_davenport:.3g}; {self.n_items} items, "
            f"{self.n_models} models)"
        )

    def _repr_html_(self) -> str:
        """Jupyter: the mean ranks and the test, with what it guarantees in one sentence."""
        import html

        table = self.to_frame().to_html(index=False, border=0, float_format=lambda v: f"{v:.4f}")
        head = (
            f"Friedman: chi2({self.df:g}) = {self.chi2:.4g}, p = {self.p:.3g}; Kendall W = "
            f"{self.kendall_w:.4g}; Iman-Davenport p = {self.p_iman_davenport:.3g}; "
            f"{self.n_items} items, {self.n_models} models"
        )
        note = (
            "The p-value tests that the models' scores are exchangeable within items (type I "
            "error at most alpha, asymptotically); it says nothing about which models differ."
        )
        return (
            f"<div><p><b>{html.escape(head)}</b></p>{table}"
            f"<p><small>{html.escape(note)}</small></p></div>"
        )


def _row_ranks(y: np.ndarray) -> tuple[np.ndarray, float]:
    """Average ranks within each item (row) and the total tie term ``sum(t^3 - t)``.

    Runs of equal values are found in the row-sorted matrix; every row starts a new run, so runs
    never span two items.
    """
    ranks = stats.rankdata(y, axis=1)
    ordered = np.sort(y, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.flatnonzero(starts.ravel())
    runs = np.diff(np.append(first, ordered.size)).astype(float)
    return ranks, float(np.sum(runs**3 - runs))


def friedman(data: Data) -> Friedman:
    """Friedman's test of "all models have the same distribution of within-item ranks".

    Parameters
    ----------
    data : Scores, UnitScores, DataFrame or path
        Items scored by every model are used; the others are counted in ``excluded``.

    Returns
    -------
    Friedman
        The chi-square statistic (tie-corrected, as ``scipy.stats.friedmanchisquare``), its p-value,
        the mean ranks, Kendall's W and the Iman-Davenport F.

    References
    ----------
    Friedman, M. (1937). The use of ranks to avoid the assumption of normality implicit in the
    analysis of variance. Journal of the American Statistical Association 32(200), 675-701.
    Iman, R. L. and Davenport, J. M. (1980). Approximations of the critical region of the Friedman
    statistic. Communications in Statistics - Theory and Methods A 9(6), 571-595.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> y = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 0], [1, 1, 0]])
    >>> round(friedman(Scores.from_matrix(y)).chi2, 4)
    2.8
    """
    units = complete_units(data)
    y = units.values
    n, k = y.shape
    ranks, ties = _row_ranks(y)
    rank_sums = ranks.sum(axis=0)
    denominator = n * k * (k + 1.0) - ties / (k - 1.0)
    if denominator <= 1e-9 * n * k * (k + 1.0):
        raise ValueError(
            "every item gives all models the same score, so the Friedman test is undefined"
        )
    chi2 = float(12.0 * np.sum((rank_sums - n * (k + 1.0) / 2.0) ** 2) / denominator)
    df = float(k - 1)
    w = chi2 / (n * (k - 1.0))
    df2 = (k - 1.0) * (n - 1.0)
    slack = n * (k - 1.0) - chi2
    if slack > 1e-12 * n * k:
        f_id = (n - 1.0) * chi2 / slack
        p_id = float(stats.f.sf(f_id, df, df2))
    else:
        f_id, p_id = np.inf, 0.0
    return Friedman(
        models=units.models,
        mean_ranks=rank_sums / n,
        chi2=chi2,
        df=df,
        p=float(stats.chi2.sf(chi2, df)),
        kendall_w=float(w),
        iman_davenport=float(f_id),
        id_df_num=df,
        id_df_den=df2,
        p_iman_davenport=p_id,
        ties=ties,
        n_items=n,
        excluded=dict(units.excluded),
    )


# ---------------------------------------------------------------------- post-hoc
