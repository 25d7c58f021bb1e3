"""Naive, paired, clustered and mixed-model statistics for every pair, side by side.

The source (Section 6) recommends reporting the naive and the correctly blocked or clustered test
statistics together: the gap between them shows how much the evaluation's structure matters for
each comparison. For every pair of models (first - second) this table gives the same difference
of means with four standard errors:

=========  ==========================================================================  ===========
column     variance of ``x_j - x_l`` (``x_j`` = model j's mean over its n_j items)        reference
=========  ==========================================================================  ===========
naive      ``S_jj + S_ll``, ``S_jj = sum_i e_ij^2 / n_j^2``: models independent           normal
paired     ``S_jj + S_ll - 2 S_jl``, ``S_jl = sum_i e_ij e_il / (n_j n_l)`` over shared   normal
           items (Miller's paired SE; the question effect cancels)
clustered  the same with ``e`` summed within clusters first, times G/(G-1) by default    t, G-1 df
           (Miller's clustered SE; design-based, no model for the within-cluster
           correlation)
mixed      contrast of estimated marginal means of the linear mixed model (model-based,  t, Satt. df
           exchangeable questions within clusters)
mixed_kr   the same contrast with Kenward-Roger's adjusted covariance Phi_A (optional,   t, K-R df
           ``kenward_roger=``; Kenward and Roger 1997)
=========  ==========================================================================  ===========

``e_ij = y_ij - x_j`` (available cases; a missing cell contributes nothing). These are the
sandwich estimators ``vcovCL(lm(score ~ 0 + model), cluster = ~item | ~cluster, type = "HC0")``.
``ratio_*`` columns divide a standard error by the naive one; ``significant_*`` flags apply Holm
at level alpha over the K(K-1)/2 two-sided p-values of each column, and ``disagree`` marks pairs on
which the naive verdict differs from the clustered one (or the mixed one, without clusters).

References
----------
Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
evaluations. arXiv:2411.00640 (Eqs. 4, 7 and 8).
Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
Journal of Human Resources 50(2), 317-372 (G/(G-1) and G-1 df).
Kenward, M. G. and Roger, J. H. (1997). Small sample inference for fixed effects from restricted
maximum likelihood. Biometrics 53(3), 983-997.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import check_alpha, jsonable
from rankci.certify.holm import adjust_pvalues
from rankci.data import Scores
from rankci.evidence.covariance import covariance_of_means
from rankci.io import as_scores
from rankci.mixed import MixedModel, mixed_model

__all__ = ["SideBySide", "side_by_side", "mean_covariances"]


@dataclass(frozen=True, repr=False, eq=False)
class SideBySide:
    """Naive, paired, clustered and mixed-model statistics for every pair of models.

    Attributes
    ----------
    models : tuple of str
    table : DataFrame
        One row per pair ``first - second`` (see the module docstring for the columns).
    means : ndarray (M,)
        Each model's mean over the items it has.
    alpha : float
    n_items, n_clusters : int
    small_sample : bool
        Whether the clustered covariance carries the G/(G - 1) factor.
    notes : dict
    """

    models: tuple[str, ...]
    table: pd.DataFrame
    means: np.ndarray
    alpha: float
    n_items: int
    n_clusters: int
    small_sample: bool
    notes: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict:
        return jsonable(
            {
                "alpha": self.alpha,
                "n_items": self.n_items,
                "n_clusters": self.n_clusters,
                "small_sample": self.small_sample,
                "means": [
                    {"model": m, "mean": x} for m, x in zip(self.models, self.means, strict=True)
                ],
                "pairs": self.table.replace({np.nan: None}).to_dict(orient="records"),
                "notes": self.notes,
            }
        )

    def __repr__(self) -> str:
        t = self.table
        counts = {
            kind: int(t[f"significant_{kind}"].sum())
            for kind in ("naive", "paired", "clustered", "mixed")
            if f"significant_{kind}" in t
        }
        listed = ", ".join(f"{k} {v}" for k, v in counts.items())
        return (
            f"SideBySide({len(self.models)} models, {len(t)} pairs; significant after Holm at "
            f"alpha={self.alpha:g}: {listed}; {int(t['disagree'].sum())} pairs disagree)"
        )


def mean_covariances(
    scores: Scores, small_sample: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Model means and their naive, paired (item) and clustered covariance matrices.

    Returns ``(means, naive, paired, clustered)``; ``clustered`` is None without clusters.
    Each covariance is a sandwich estimator of ``Cov(x)`` with a different independence unit
    (row, item, cluster), from one matrix product over the items x models residuals.

    Parameters
    ----------
    scores : Scores
    small_sample : bool, default True
        The G/(G - 1) factor on the clustered covariance (``small_sample="cadjust"`` of
        :func:`rankci.evidence.covariance.covariance_of_means`).

    Returns
    -------
    (ndarray, ndarray, ndarray, ndarray or None)
        Means (M,), and the naive (diagonal), paired and clustered M x M covariances.

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640 (Sections 3-4).

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[1, 0], [1, 1], [0, 0], [1, 0]])
    >>> means, naive, paired, clustered = mean_covariances(Scores.from_matrix(x))
    >>> paired.round(6).tolist(), clustered is None  # sum_i e_i e_i' / n^2 by hand: 0.046875 ...
    ([[0.046875, 0.015625], [0.015625, 0.046875]], True)
    """
    units = scores.units("item", "pairwise")
    means, paired, _, _ = covariance_of_means(units.values)
    naive = np.diag(np.diag(paired))
    clustered = None
    if scores.clusters is not None:
        correction = "cadjust" if small_sample else False
        _, clustered, _, _ = covariance_of_means(units.values, units.unit_cluster, correction)
    return means, naive, paired, clustered


def _pair_var(cov: np.ndarray, j: np.ndarray, l: np.ndarray) -> np.ndarray:
    return np.maximum(cov[j, j] + cov[l, l] - 2.0 * cov[j, l], 0.0)


def side_by_side(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    mixed: MixedModel | bool = True,
    alpha: float = 0.05,
    small_sample: bool = True,
    kenward_roger: MixedModel | bool = False,
) -> SideBySide:
    """Naive, paired, clustered and mixed-model statistics for every pair, with the gaps.

    Parameters
    ----------
    data : Scores, DataFrame or path
    mixed : MixedModel or bool, default True
        A fitted :func:`rankci.mixed_model` to show beside the design-based columns, True to fit
        one, or False to leave the mixed columns out.
    alpha : float, default 0.05
        Level of the Holm-adjusted ``significant_*`` flags.
    small_sample : bool, default True
        Multiply the clustered covariance by G/(G-1) (G = clusters), as is usual with few clusters
        (the small-sample correction ``True``/``"cadjust"`` of the other clustered estimators;
        the clustered test uses G - 1 df either way).
    kenward_roger : MixedModel or bool, default False
        Add the ``mixed_kr`` columns: a mixed model fitted with ``df="kenward-roger"``, or True to
        evaluate one at the mixed model's own variance parameters (same formula and theta).

    Returns
    -------
    SideBySide
        One row per pair: the naive, paired, clustered and mixed-model standard errors and tests,
        and their ratios (``to_frame()``).

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640 (Eqs. 4, 7 and 8).
    Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
    Journal of Human Resources 50(2), 317-372 (G/(G-1) and G - 1 df).

    Examples
    --------
    >>> import rankci
    >>> table = rankci.side_by_side(rankci.datasets.load_mmlu_pro(), mixed=False).to_frame()
    >>> bool((table["ratio_paired"] < 1).mean() > 0.9)  # pairing removes the question effect
    True
    """
    scores = as_scores(data)
    alpha = check_alpha(alpha)
    means, naive, paired, clustered = mean_covariances(scores, small_sample)
    k = scores.n_models
    j, l = np.triu_indices(k, 1)
    names = np.asarray(scores.models, dtype=object)
    estimate = means[j] - means[l]
    out = {"first": names[j], "second": names[l], "estimate": estimate}
    notes: dict = {}
    kinds = []

    def add(kind: str, se: np.ndarray, df: np.ndarray | float) -> None:
        with np.errstate(invalid="ignore", divide="ignore"):
            stat = estimate / se
        out[f"se_{kind}"] = se
        out[f"{'z' if np.all(np.isinf(df)) else 't'}_{kind}"] = stat
        if not np.all(np.isinf(df)):
            out[f"df_{kind}"] = np.broadcast_to(df, se.shape).astype(float)
        out[f"p_{kind}"] = 2.0 * special.stdtr(df, -np.abs(stat))
        kinds.append(kind)

    add("naive", np.sqrt(_pair_var(naive, j, l)), np.inf)
    add("paired", np.sqrt(_pair_var(paired, j, l)), np.inf)
    n_clusters = 0
    if clustered is not None:
        n_clusters = len(scores.clusters)
        add("clustered", np.sqrt(_pair_var(clustered, j, l)), float(max(n_clusters - 1, 1)))
    else:
        notes["clustered"] = "left out: the data have no cluster column"
    if mixed is not False:
        model = mixed if isinstance(mixed, MixedModel) else mixed_model(scores)
        if model.models != scores.models:
            raise ValueError("the mixed model was fitted to different models than these data")
        out["estimate_mixed"] = model.emmean[j] - model.emmean[l]
        se, df = model.pair_se[j, l], model.pair_df[j, l]
        out["se_mixed"] = se
        out["t_mixed"] = out["estimate_mixed"] / se
        out["df_mixed"] = df
        out["p_mixed"] = 2.0 * special.stdtr(df, -np.abs(out["t_mixed"]))
        kinds.append("mixed")
        notes["mixed"] = model.formula
        if kenward_roger is not False:
            kr = kenward_roger
            if not isinstance(kr, MixedModel):
                kr = mixed_model(
                    scores, df="kenward-roger", theta=model.theta, random=_random_of(model)
                )
            if kr.models != scores.models or kr.df_method != "kenward-roger":
                raise ValueError(
                    "kenward_roger must be a mixed model of these data fitted with "
                    "df='kenward-roger'"
                )
            out["estimate_mixed_kr"] = kr.emmean[j] - kr.emmean[l]
            out["se_mixed_kr"] = kr.pair_se[j, l]
            out["t_mixed_kr"] = out["estimate_mixed_kr"] / out["se_mixed_kr"]
            out["df_mixed_kr"] = kr.pair_df[j, l]
            out["p_mixed_kr"] = 2.0 * special.stdtr(out["df_mixed_kr"], -np.abs(out["t_mixed_kr"]))
            kinds.append("mixed_kr")
            notes["mixed_kr"] = f"{kr.formula} (kenward-roger df)"
    for kind in kinds[1:]:
        out[f"ratio_{kind}"] = out[f"se_{kind}"] / out["se_naive"]
    for kind in kinds:
        out[f"significant_{kind}"] = adjust_pvalues(out[f"p_{kind}"], "holm") <= alpha
    reference = "clustered" if "clustered" in kinds else ("mixed" if "mixed" in kinds else "paired")
    out["disagree"] = out["significant_naive"] != out[f"significant_{reference}"]
    notes["disagree"] = (
        f"naive verdict differs from the {reference} verdict (Holm, alpha={alpha:g})"
    )
    return SideBySide(
        models=scores.models,
        table=pd.DataFrame(out),
        means=means,
        alpha=alpha,
        n_items=scores.n_items,
        n_clusters=n_clusters,
        small_sample=bool(small_sample),
        notes=notes,
    )


def _random_of(model: MixedModel) -> str:
    """The ``random=`` of :func:`rankci.mixed_model` that gave this model's formula."""
    if "(1|model:cluster)" in model.formula:
        return "model:cluster"
    return "cluster" if "(1|cluster)" in model.formula else "item"
