"""The paired verdict beside the score intervals: paired tests of every ordered pair + Holm.

Item-level methods use the paired t of :func:`rankci.pairwise_tests`; the cluster methods use
Miller's clustered paired z (Eq. 8; a t with a small-sample correction), whose variance
``S_jj + S_ll - 2 S_jl`` comes from the cluster-robust covariance of the means. Holm's procedure
at ``alpha`` over all M(M-1) ordered pairs certifies "j better than l"; with probability
>= 1 - alpha every certified pair is true at once.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import special

from rankci._base import RankciWarning
from rankci.certify.holm import certifiable_pvalues, reject
from rankci.data import UnitScores
from rankci.evidence.covariance import grouped_residuals
from rankci.evidence.moments import MIN_CERTIFYING_UNITS, score_width, variance_is_zero
from rankci.evidence.pairwise import Pairwise, pairwise_tests
from rankci.ranking import transitive_closure

__all__ = ["clustered_pairwise", "paired_verdict"]


def clustered_pairwise(
    units: UnitScores, cluster: np.ndarray, small_sample: bool | str = "auto"
) -> Pairwise:
    """Miller's clustered paired test of every ordered pair (Eq. 8), as a :class:`Pairwise`.

    ``z_jl = (mean_j - mean_l) / sqrt(S_jj + S_ll - 2 S_jl)`` with S the cluster-robust covariance
    of the means (:func:`rankci.means_covariance`); one-sided p-value ``1 - Phi(z_jl)``. With a
    small-sample correction S carries it (G/(G-1), or CR2) and the p-value comes from Student's t
    with G - 1 df (``"cadjust"``) or the smaller of the two models' Satterthwaite df (``"cr2"``;
    exact for the contrast when both models have the same items).

    A zero variance is never evidence: where ``S_jj + S_ll - 2 S_jl`` is zero up to rounding
    (:func:`rankci.evidence.moments.variance_is_zero`, an absolute rule on the scores' width,
    not a comparison with ``S_jj + S_ll``, which vanish too when every cluster has the same
    means) the pair gets p = 1. Two clusters never certify anything: with fewer than
    :data:`rankci.evidence.moments.MIN_CERTIFYING_UNITS` (3) clusters every p-value is 1, with a
    warning.

    Parameters
    ----------
    units : UnitScores
        Units x models scores.
    cluster : numpy.ndarray
        Cluster code of each unit.
    small_sample : bool or str, default "auto"
        ``"auto"`` (CR2 at every number of clusters: :func:`rankci.evidence.covariance.
        resolve_small_sample`), ``False``/``"none"``, ``True``/``"cadjust"`` or ``"cr2"``.

    Returns
    -------
    Pairwise
        ``statistic[j, l]`` and one-sided ``pvalue[j, l]`` for "j better than l".

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640 (Eq. 8).
    Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
    Journal of Human Resources 50(2), 317-372.

    Examples
    --------
    Eight clusters of five items; ``S = sum_g e_g e_g' / n^2`` with ``e_g`` the cluster sums of the
    centred scores:

    >>> import numpy as np, rankci
    >>> from scipy import stats
    >>> x = (np.random.default_rng(0).random((40, 3)) < [0.9, 0.6, 0.3]).astype(float)
    >>> units = rankci.Scores.from_matrix(x).units("item", missing="complete")
    >>> cluster = np.repeat(np.arange(8), 5)
    >>> pairwise = clustered_pairwise(units, cluster, small_sample=False)  # plain HC0
    >>> z, p = pairwise.statistic[1, 2], pairwise.pvalue[1, 2]
    >>> pairwise.test, round(float(z), 4), round(float(p), 6)
    ('clustered-z', 1.6112, 0.053566)
    >>> e = np.array([(x - x.mean(axis=0))[cluster == g].sum(axis=0) for g in range(8)])
    >>> s = e.T @ e / 40**2
    >>> z = (x[:, 1].mean() - x[:, 2].mean()) / np.sqrt(s[1, 1] + s[2, 2] - 2 * s[1, 2])
    >>> round(float(z), 4), round(float(stats.norm.sf(z)), 6)
    (1.6112, 0.053566)
    """
    grouped = grouped_residuals(units.values, cluster, small_sample)
    mean, cov = grouped.mean, grouped.covariance()
    diag = np.diag(cov)
    var = np.maximum(diag[:, None] + diag[None, :] - 2.0 * cov, 0.0)
    estimate = mean[:, None] - mean[None, :]
    zero = variance_is_zero(var, score_width(units.values))
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(var)
        stat = np.where(zero, np.sign(estimate) * np.inf, estimate / se)
    stat = np.where(zero & (estimate == 0), 0.0, stat)
    df = np.minimum(grouped.df[:, None], grouped.df[None, :])
    finite_df = np.isfinite(df)
    pvalue = np.where(
        finite_df, special.stdtr(np.where(finite_df, df, 1.0), -stat), special.ndtr(-stat)
    )
    pvalue = np.where(zero, 1.0, pvalue)  # a zero variance across clusters is no evidence
    if grouped.n_groups < MIN_CERTIFYING_UNITS:
        pvalue[:] = 1.0
        warnings.warn(
            f"the clustered paired verdict with only {int(grouped.n_groups)} cluster(s) certifies "
            f"nothing: two clusters never certify anything, at least {MIN_CERTIFYING_UNITS} are "
            "needed (or item units without clustering, for inference to new questions of these "
            "clusters)",
            RankciWarning,
            stacklevel=2,
        )
    finite = np.isfinite(units.values)
    if finite.all():
        shared = np.full(estimate.shape, units.n_units, dtype=np.int64)
    else:
        shared = (finite.T.astype(float) @ finite.astype(float)).round().astype(np.int64)
    for matrix in (estimate, stat, pvalue):
        np.fill_diagonal(matrix, np.nan)
    mode = grouped.mode
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


#: the verdict's test in words, per rule of ``test="auto"`` (the guarantee reads "Holm over
#: one-sided {words} tests of all ordered pairs")
VERDICT_WORDS = {
    "sign": "exact McNemar (sign)",
    "t": "paired t",
    "mixed": "exact McNemar (sign) on pairs of 0/1 units and paired t",
}


def paired_verdict(
    units: UnitScores,
    alpha: float,
    cluster: np.ndarray | None = None,
    small_sample: bool | str = "auto",
) -> tuple[Pairwise, np.ndarray, dict]:
    """Paired evidence, the certified pairs (Holm over all ordered pairs, closed) and a summary.

    Without ``cluster`` every ordered pair gets the default one-sided paired test,
    ``test="auto"`` (:func:`rankci.pairwise_tests`): the exact McNemar (sign) test where both
    models' units are 0/1, the plain paired t elsewhere, as ``rankci.rank`` and ``rankci check``
    (no exact floor); with it, :func:`clustered_pairwise`. Holm's procedure at
    ``alpha`` over the M(M-1) ordered pairs certifies "j better than l", and the certified pairs
    are closed transitively.

    Parameters
    ----------
    units : UnitScores
        Units x models scores.
    alpha : float
        Family-wise error rate.
    cluster : numpy.ndarray, optional
        Cluster code of each unit (clustered tests).
    small_sample : bool or str, default "auto"
        Small-sample correction of the clustered tests (see :func:`clustered_pairwise`).

    Returns
    -------
    (Pairwise, numpy.ndarray, dict)
        The tests, the M x M boolean certified pairs and a summary (``test``, ``multiplicity``,
        ``alpha``, ``description``).

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640 (Eq. 8).

    Examples
    --------
    On 0/1 items, the exact McNemar (sign) p-values (scipy's one-sided binomial test on the
    discordant items); Holm's thresholds 0.05/6 and 0.05/5 pass the first two, 0.05/4 stops
    the third:

    >>> import numpy as np, rankci
    >>> from scipy import stats
    >>> x = (np.random.default_rng(0).random((40, 3)) < [0.9, 0.6, 0.3]).astype(float)
    >>> units = rankci.Scores.from_matrix(x).units("item", missing="complete")
    >>> pairwise, certified, summary = paired_verdict(units, 0.05)
    >>> certified.tolist()
    [[False, True, True], [False, False, False], [False, False, False]]
    >>> summary["description"]
    'exact McNemar (sign)'
    >>> def sign_p(j, l):
    ...     b = int(((x[:, j] == 1) & (x[:, l] == 0)).sum())
    ...     c = int(((x[:, j] == 0) & (x[:, l] == 1)).sum())
    ...     return stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    >>> bool(np.allclose(pairwise.pvalue[[0, 0, 1], [1, 2, 2]], [sign_p(0, 1), sign_p(0, 2),
    ...                                                          sign_p(1, 2)]))
    True
    """
    if cluster is None:
        pairwise = pairwise_tests(units, "auto")
        words = VERDICT_WORDS[pairwise.options["test_rule"]]
    else:
        pairwise = clustered_pairwise(units, cluster, small_sample)
        words = {
            "none": "clustered paired z (Miller)",
            "cadjust": f"clustered paired t (Miller, G/(G-1), "
            f"{pairwise.options['n_clusters'] - 1} df)",
            "cr2": "clustered paired t (Miller, CR2, Satterthwaite df)",
        }[pairwise.options["small_sample"]]
    certified = reject(certifiable_pvalues(pairwise), alpha, "holm")  # 2 units never certify
    closed = transitive_closure(certified, units.models)
    summary = {"test": pairwise.test, "multiplicity": "holm", "alpha": alpha, "description": words}
    return pairwise, closed, summary
