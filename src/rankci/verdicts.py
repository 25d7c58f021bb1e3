"""The paired verdict beside the score intervals: paired tests of every ordered pair + Holm.

Item-level methods use the paired t of :func:`rankci.pairwise_tests`; the cluster methods use
Miller's clustered paired z (Eq. 8), whose variance ``S_jj + S_ll - 2 S_jl`` comes from the
cluster-robust covariance of the means. Holm's procedure at ``alpha`` over all M(M-1) ordered pairs
certifies "j better than l"; with probability >= 1 - alpha every certified pair is true at once.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .covariance import covariance_of_means
from .data import UnitScores
from .multiplicity import reject
from .pairwise import Pairwise, pairwise_tests
from .ranking import transitive_closure

__all__ = ["clustered_pairwise", "paired_verdict"]


def clustered_pairwise(units: UnitScores, cluster: np.ndarray, small_sample: bool) -> Pairwise:
    """Miller's clustered paired z test of every ordered pair (Eq. 8), as a :class:`Pairwise`.

    ``z_jl = (mean_j - mean_l) / sqrt(S_jj + S_ll - 2 S_jl)`` with S the cluster-robust covariance
    of the means (:func:`means_covariance`); one-sided p-value ``1 - Phi(z_jl)``. With
    ``small_sample`` the covariance carries the factor G/(G-1) and the p-value comes from Student's
    t with G - 1 degrees of freedom.
    """
    mean, cov, n, n_groups = covariance_of_means(units.values, cluster, small_sample)
    diag = np.diag(cov)
    var = np.maximum(diag[:, None] + diag[None, :] - 2.0 * cov, 0.0)
    estimate = mean[:, None] - mean[None, :]
    scale = diag[:, None] + diag[None, :]
    zero = var <= 1e-12 * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(var)
        stat = np.where(zero, np.sign(estimate) * np.inf, estimate / se)
    stat = np.where(zero & (estimate == 0), 0.0, stat)
    if small_sample:
        pvalue = special.stdtr(max(n_groups - 1, 1), -stat)
    else:
        pvalue = special.ndtr(-stat)
    finite = np.isfinite(units.values).astype(float)
    shared = (finite.T @ finite).round().astype(np.int64)
    for matrix in (estimate, stat, pvalue):
        np.fill_diagonal(matrix, np.nan)
    return Pairwise(
        models=units.models,
        test="clustered-z",
        delta=0.0,
        estimate=estimate,
        statistic=stat,
        pvalue=pvalue,
        n=shared,
        se=se,
        df=np.full(estimate.shape, float(n_groups - 1)) if small_sample else None,
        unit=units.unit,
        missing=units.missing,
        options={"small_sample": bool(small_sample), "n_clusters": int(n_groups)},
        excluded=dict(units.excluded),
        score=mean,
        n_units=units.n_units,
    )


def paired_verdict(
    units: UnitScores,
    alpha: float,
    cluster: np.ndarray | None = None,
    small_sample: bool = False,
) -> tuple[Pairwise, np.ndarray, dict]:
    """Paired evidence, the certified pairs (Holm over all ordered pairs, closed) and a summary."""
    if cluster is None:
        pairwise = pairwise_tests(units, "t")
        words = "paired t"
    else:
        pairwise = clustered_pairwise(units, cluster, small_sample)
        words = "clustered paired " + (
            f"t (Miller, G/(G-1), {pairwise.options['n_clusters'] - 1} df)" if small_sample
            else "z (Miller)"
        )
    certified = reject(pairwise.pvalue, alpha, "holm")
    closed = transitive_closure(certified, units.models)
    summary = {"test": pairwise.test, "multiplicity": "holm", "alpha": alpha, "description": words}
    return pairwise, closed, summary
