"""The paired verdict beside the score intervals: paired tests of every ordered pair + Holm.

Item-level methods use the paired t of :func:`rankci.pairwise_tests`; the cluster methods use
Miller's clustered paired z (Eq. 8; a t with a small-sample correction), whose variance
``S_jj + S_ll - 2 S_jl`` comes from the cluster-robust covariance of the means. Holm's procedure
at ``alpha`` over all M(M-1) ordered pairs certifies "j better than l"; with probability
>= 1 - alpha every certified pair is true at once.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from rankci.certify.holm import reject
from rankci.data import UnitScores
from rankci.evidence.covariance import grouped_residuals, small_sample_mode
from rankci.evidence.pairwise import Pairwise, pairwise_tests
from rankci.ranking import transitive_closure

__all__ = ["clustered_pairwise", "paired_verdict"]


def clustered_pairwise(
    units: UnitScores, cluster: np.ndarray, small_sample: bool | str = False
) -> Pairwise:
    """Miller's clustered paired test of every ordered pair (Eq. 8), as a :class:`Pairwise`.

    ``z_jl = (mean_j - mean_l) / sqrt(S_jj + S_ll - 2 S_jl)`` with S the cluster-robust covariance
    of the means (:func:`rankci.means_covariance`); one-sided p-value ``1 - Phi(z_jl)``. With a
    small-sample correction S carries it (G/(G-1), or CR2) and the p-value comes from Student's t
    with G - 1 df (``"cadjust"``) or the smaller of the two models' Satterthwaite df (``"cr2"``;
    exact for the contrast when both models have the same items).
    """
    grouped = grouped_residuals(units.values, cluster, small_sample)
    mean, cov = grouped.mean, grouped.covariance()
    diag = np.diag(cov)
    var = np.maximum(diag[:, None] + diag[None, :] - 2.0 * cov, 0.0)
    estimate = mean[:, None] - mean[None, :]
    scale = diag[:, None] + diag[None, :]
    zero = var <= 1e-12 * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(var)
        stat = np.where(zero, np.sign(estimate) * np.inf, estimate / se)
    stat = np.where(zero & (estimate == 0), 0.0, stat)
    df = np.minimum(grouped.df[:, None], grouped.df[None, :])
    finite_df = np.isfinite(df)
    pvalue = np.where(
        finite_df, special.stdtr(np.where(finite_df, df, 1.0), -stat), special.ndtr(-stat)
    )
    finite = np.isfinite(units.values)
    if finite.all():
        shared = np.full(estimate.shape, units.n_units, dtype=np.int64)
    else:
        shared = (finite.T.astype(float) @ finite.astype(float)).round().astype(np.int64)
    for matrix in (estimate, stat, pvalue):
        np.fill_diagonal(matrix, np.nan)
    mode = small_sample_mode(small_sample)
    return Pairwise(
        models=units.models,
        test="clustered-z" if mode == "none" else "clustered-t",
        delta=0.0,
        estimate=estimate,
        statistic=stat,
        pvalue=pvalue,
        n=shared,
        se=se,
        df=df if finite_df.all() else None,
        unit=units.unit,
        missing=units.missing,
        options={"small_sample": mode, "n_clusters": int(grouped.n_groups)},
        excluded=dict(units.excluded),
        score=mean,
        n_units=units.n_units,
    )


def paired_verdict(
    units: UnitScores,
    alpha: float,
    cluster: np.ndarray | None = None,
    small_sample: bool | str = False,
) -> tuple[Pairwise, np.ndarray, dict]:
    """Paired evidence, the certified pairs (Holm over all ordered pairs, closed) and a summary."""
    if cluster is None:
        pairwise = pairwise_tests(units, "t")
        words = "paired t"
    else:
        pairwise = clustered_pairwise(units, cluster, small_sample)
        words = {
            "none": "clustered paired z (Miller)",
            "cadjust": f"clustered paired t (Miller, G/(G-1), "
            f"{pairwise.options['n_clusters'] - 1} df)",
            "cr2": "clustered paired t (Miller, CR2, Satterthwaite df)",
        }[pairwise.options["small_sample"]]
    certified = reject(pairwise.pvalue, alpha, "holm")
    closed = transitive_closure(certified, units.models)
    summary = {"test": pairwise.test, "multiplicity": "holm", "alpha": alpha, "description": words}
    return pairwise, closed, summary
