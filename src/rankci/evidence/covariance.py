"""The covariance matrix of the model means: item-level (paired) or cluster-robust (Miller).

``Sigma[j, l] = c * sum_g (sum_{i in g} e_ij)(sum_{i in g} e_il) / (n_j n_l)``, with
``e_ij = x_ij - mean_j`` (0 where model j has no score for unit i) and g running over units (items
independent; models paired on the units they share) or over clusters (Miller 2024, Eq. 4). It is
the HC0 sandwich of the least-squares fit ``score ~ 0 + model`` clustered on the unit or the
cluster, i.e. R's ``sandwich::vcovCL(..., type="HC0")``; ``c = G/(G-1)`` with ``small_sample``
(``cadjust=TRUE``), else 1. Its diagonal gives the per-model standard errors, and
``S_jj + S_ll - 2 S_jl`` the variance of a difference of means (Miller's paired and clustered
paired standard errors).

Small-sample corrections (``small_sample``): ``"cadjust"`` (or ``True``) multiplies by G/(G-1)
and pairs with Student's t on G - 1 df; ``"cr2"`` is the bias-reduced linearization of Bell and
McCaffrey (2002), ``S_g -> S_g / sqrt(1 - n_g/n)`` for a mean, with Satterthwaite degrees of
freedom (Imbens and Kolesar 2016), which also copes with clusters of very unequal sizes.

References
----------
Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
evaluations. arXiv:2411.00640.
Zeileis, A., Koell, S. and Graham, N. (2020). Various versatile variances: an object-oriented
implementation of clustered covariances in R. Journal of Statistical Software 95(1).
Bell, R. M. and McCaffrey, D. F. (2002). Bias reduction in standard errors for linear regression
with multi-stage samples. Survey Methodology 28(2), 169-181.
Imbens, G. W. and Kolesar, M. (2016). Robust standard errors in small samples: some practical
advice. Review of Economics and Statistics 98(4), 701-712.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from rankci._base import LazyModule, check_choice, jsonable
from rankci.data import MISSING, UNITS, Scores, UnitScores
from rankci.evidence import bootstrap as boot
from rankci.io import as_scores
from rankci.method import COVARIANCES

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

KINDS = ("item", "cluster")
SMALL_SAMPLE = ("auto", "none", "cadjust", "cr2")
#: Below this many clusters ``small_sample="auto"`` takes CR2, and the cluster bootstrap warns.
FEW_CLUSTERS = 50

__all__ = [
    "KINDS",
    "SMALL_SAMPLE",
    "MeansCovariance",
    "covariance_of_means",
    "grouped_residuals",
    "means_covariance",
    "units_covariance",
]


# ---------------------------------------------------------------------- inputs
def unit_clusters(scores: Scores, units: UnitScores) -> np.ndarray:
    """The cluster code (into ``scores.clusters``) of every row of ``units``.

    Defined for item and observation units (both nested in clusters).
    """
    if scores.clusters is None:
        raise ValueError("this needs a cluster column (subject, category, task, ...)")
    if units.unit not in ("item", "observation") or units.unit_cluster is None:
        raise ValueError(
            "a cluster-robust analysis needs units nested in clusters: item or observation "
            f"units, not unit={units.unit!r}"
        )
    return units.unit_cluster


# ---------------------------------------------------------------------- covariance of the means
@dataclass(frozen=True, repr=False, eq=False)
class MeansCovariance:
    """The model means and the covariance matrix of their sampling distribution.

    Attributes
    ----------
    models : tuple of str
    mean : ndarray (M,)
        Available-case means ``mean_j`` (over the units model j has).
    cov : ndarray (M, M)
        ``cov[j, l] = c sum_g (sum_{i in g} e_ij)(sum_{i in g} e_il) / (n_j n_l)``, the sandwich
        (HC0) covariance of the means, with g = units (``kind="item"``) or clusters
        (``kind="cluster"``) and ``c = G/(G - 1)`` for ``small_sample="cadjust"`` else 1
        (``"cr2"`` rescales each group's sums instead).
    n : ndarray (M,) of int
        Units scored per model.
    kind : {"item", "cluster"}
    small_sample : {"none", "cadjust", "cr2"}
    df : ndarray (M,)
        Degrees of freedom for a t reference: inf (none), G - 1 (cadjust), Satterthwaite (cr2).
    n_groups : int
        G: units (``kind="item"``) or clusters with at least one unit (0 when unknown, for
        means and a covariance given directly).
    unit, missing : str or None
        How the scores were aggregated (None when the means were given directly).
    excluded : dict
    n_units : int
        Units behind the means.
    """

    models: tuple[str, ...]
    mean: np.ndarray
    cov: np.ndarray
    n: np.ndarray
    kind: str
    small_sample: str
    n_groups: int
    df: np.ndarray | None = None
    unit: str | None = "item"
    missing: str | None = "pairwise"
    excluded: dict = field(default_factory=dict)
    n_units: int = 0

    @property
    def se(self) -> np.ndarray:
        """Standard error of each mean (square root of the diagonal)."""
        return np.sqrt(np.diag(self.cov))

    def difference_se(self) -> np.ndarray:
        """M x M standard errors of ``mean_j - mean_l``: ``sqrt(S_jj + S_ll - 2 S_jl)``."""
        diag = np.diag(self.cov)
        var = diag[:, None] + diag[None, :] - 2.0 * self.cov
        return np.sqrt(np.maximum(var, 0.0))

    def to_frame(self) -> pd.DataFrame:
        """model, mean, n, then one covariance column per model (the oracle files' layout)."""
        frame = pd.DataFrame({"model": list(self.models), "mean": self.mean, "n": self.n})
        cov = pd.DataFrame(self.cov, columns=list(self.models))
        return pd.concat([frame, cov], axis=1)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "small_sample": self.small_sample,
            "n_groups": int(self.n_groups),
            "df": jsonable(self.df),
            "unit": self.unit,
            "missing": self.missing,
            "models": list(self.models),
            "mean": jsonable(self.mean),
            "n": jsonable(self.n),
            "cov": jsonable(self.cov),
            "excluded": jsonable(self.excluded),
        }

    def __repr__(self) -> str:
        adj = f", small_sample={self.small_sample!r}" if self.small_sample != "none" else ""
        return (
            f"MeansCovariance({len(self.models)} models, kind={self.kind!r}{adj}, "
            f"{self.n_groups} groups, unit={self.unit!r})"
        )


def centred(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(available-case means, residuals with 0 where not scored, counts) of each column."""
    finite = np.isfinite(values)
    n = finite.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.where(finite, values, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)
    return mean, np.where(finite, values - mean, 0.0), n


def small_sample_mode(value: object) -> str:
    """``False``/``None``/"none" -> "none"; ``True``/"cadjust" -> "cadjust"; "cr2"; "auto"."""
    if value is None or value is False:
        return "none"
    if value is True:
        return "cadjust"
    return check_choice("small_sample", value, SMALL_SAMPLE)


def resolve_small_sample(value: object, clustered: bool = True) -> str:
    """The correction ``small_sample="auto"`` stands for: CR2 for clusters, at any number of them.

    With few clusters the plain (HC0) cluster-robust variance is biased down and its normal
    quantile too small: uncorrected intervals covered 0.82-0.83 with 5 clusters (issue 16,
    validation/README.md). CR2 with Satterthwaite degrees of freedom (Bell and McCaffrey 2002;
    Imbens and Kolesar 2016) is the standard remedy. "auto" once dropped it from 50 clusters;
    on real cluster populations that switch lost coverage (0.939 -> 0.931 on MMLU-Pro and
    0.942 -> 0.923 on ChemBench from G = 30 to G = 50, validation/few_clusters_real.py), so
    "auto" keeps CR2 at every G. Independent units (no clusters) take no correction.

    Examples
    --------
    >>> resolve_small_sample("auto")
    'cr2'
    >>> resolve_small_sample("auto", clustered=False)
    'none'
    >>> resolve_small_sample(True)
    'cadjust'
    """
    mode = small_sample_mode(value)
    if mode != "auto":
        return mode
    return "cr2" if clustered else "none"


@dataclass(frozen=True)
class GroupedResiduals:
    """Per-group residual sums (adjusted for CR2), the counts and the small-sample facts."""

    mean: np.ndarray
    sums: np.ndarray  # G x M
    n: np.ndarray
    n_groups: int
    factor: float  # G/(G-1) for "cadjust", else 1
    df: np.ndarray  # per model: inf (none), G - 1 (cadjust), Bell-McCaffrey (cr2)
    mode: str = "none"  # the correction applied ("auto" resolved)

    def variance(self) -> np.ndarray:
        """Diagonal of the covariance of the means."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.factor * (self.sums**2).sum(axis=0) / self.n.astype(float) ** 2

    def covariance(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.factor * (self.sums.T @ self.sums) / np.outer(self.n, self.n)


def grouped_residuals(
    values: np.ndarray, cluster: np.ndarray | None = None, small_sample: object = False
) -> GroupedResiduals:
    """Residual sums per group (unit, or cluster when ``cluster`` gives each row's code).

    CR2 (Bell and McCaffrey 2002) for a mean: the hat matrix of cluster g is ``J / n``, so
    ``(I - H_gg)^{-1/2} e_g`` has sum ``S_g / sqrt(1 - n_g/n)``; its Satterthwaite degrees of
    freedom under a working independence model (Imbens and Kolesar 2016) are
    ``(tr K)^2 / tr K^2`` with ``K = diag(a) - b b'/n``, ``a_g = w_g n_g``, ``b_g^2 = w_g n_g^2``,
    ``w_g = 1 / (1 - n_g/n)``. Without clusters CR2 gives ``s^2/n`` with n - 1 df.

    Parameters
    ----------
    values : ndarray (units, models)
        NaN where a model has no score.
    cluster : array_like, optional
        Each unit's cluster label; None: every unit its own group.
    small_sample : {"auto", False, True, "cadjust", "cr2"}, default False
        See :func:`resolve_small_sample`.

    Returns
    -------
    GroupedResiduals

    Raises
    ------
    ValueError
        With ``cluster`` and fewer than 2 clusters.

    References
    ----------
    Bell, R. M. and McCaffrey, D. F. (2002). Bias reduction in standard errors for linear
    regression with multi-stage samples. Survey Methodology 28(2), 169-181.
    Imbens, G. W. and Kolesar, M. (2016). Robust standard errors in small samples: some practical
    advice. Review of Economics and Statistics 98(4), 701-712.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    >>> g = grouped_residuals(x, cluster=[0, 0, 1, 1])
    >>> g.n_groups, g.covariance().round(6).tolist()  # cluster sums of e, by hand: 0.03125
    (2, [[0.03125, 0.03125], [0.03125, 0.03125]])
    """
    mean, residuals, n = centred(values)
    if cluster is None:
        sums, n_groups = residuals, residuals.shape[0]
    else:
        codes, compact = np.unique(cluster, return_inverse=True)
        n_groups = len(codes)
        if n_groups < 2:
            raise ValueError(
                "the covariance of the means needs at least 2 independent clusters, but every "
                "unit is in the same cluster: one cluster says nothing about "
                "new clusters, and a variance across clusters is not defined. Use item units "
                "without clustering (inference to new questions of this cluster), or add "
                "clusters"
            )
        sums, _ = boot.cluster_sums(residuals, compact, n_groups)
    mode = resolve_small_sample(small_sample, clustered=cluster is not None)
    factor = 1.0
    df = np.full(values.shape[1], np.inf)
    if mode == "cadjust":
        factor = n_groups / max(n_groups - 1, 1)
        df[:] = max(n_groups - 1, 1)
    elif mode == "cr2":
        finite = np.isfinite(values).astype(np.float64)
        if cluster is None:
            sizes = finite
        else:
            sizes, _ = boot.cluster_sums(finite, compact, n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            keep = 1.0 - sizes / n
            weight = np.where(keep > 0, 1.0 / keep, np.nan)
            sums = sums * np.sqrt(weight)
            a, b2 = weight * sizes, weight * sizes**2
            trace = a.sum(axis=0) - b2.sum(axis=0) / n
            square = (a**2).sum(axis=0) - 2 * (a * b2).sum(axis=0) / n + b2.sum(axis=0) ** 2 / n**2
            df = trace**2 / square
    return GroupedResiduals(
        mean=mean, sums=sums, n=n, n_groups=n_groups, factor=factor, df=df, mode=mode
    )


def covariance_of_means(
    values: np.ndarray, cluster: np.ndarray | None = None, small_sample: object = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(means, sandwich covariance of the means, counts, G) of a units x models matrix.

    Parameters
    ----------
    values : ndarray (units, models)
    cluster : array_like, optional
    small_sample : {"auto", False, True, "cadjust", "cr2"}, default False
        As :func:`grouped_residuals`.

    Returns
    -------
    (ndarray, ndarray, ndarray, int)

    References
    ----------
    Zeileis, A., Koell, S. and Graham, N. (2020). Various versatile variances: an object-oriented
    implementation of clustered covariances in R. Journal of Statistical Software 95(1), 1-36.

    Examples
    --------
    >>> import numpy as np
    >>> mean, cov, n, g = covariance_of_means(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0],
    ...                                                 [1.0, 0.0]]))
    >>> mean.tolist(), cov.round(6).tolist(), g
    ([0.75, 0.25], [[0.046875, 0.015625], [0.015625, 0.046875]], 4)
    """
    grouped = grouped_residuals(values, cluster, small_sample)
    return grouped.mean, grouped.covariance(), grouped.n, grouped.n_groups


def means_covariance(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    covariance: str = "independent",
    small_sample: bool | str = False,
    unit: str = "item",
    missing: str = "complete",
) -> MeansCovariance:
    """Covariance matrix of the model means, item-level or cluster-robust.

    ``Sigma[j, l] = c * sum_g (sum_{i in g} e_ij)(sum_{i in g} e_il) / (n_j n_l)`` with
    ``e_ij = x_ij - mean_j`` (0 where model j has no score for unit i), g running over units
    (``covariance="independent"``: units independent, models paired on shared units) or clusters
    (``covariance="cluster"``: Miller's clustered estimator, Eq. 4), and ``c = G/(G-1)`` with
    ``small_sample=True`` (G = number of groups), else 1. This is
    ``sandwich::vcovCL(lm(score ~ 0 + model), cluster=~item or ~cluster, type="HC0")`` in R,
    with available cases (each model's mean over the units it has).

    Parameters
    ----------
    data : Scores, DataFrame or path
    covariance : {"independent", "cluster"}, default "independent"
        Units independent, or cluster-robust over the cluster column (the one spelling of
        clustered inference with items as the units, as max-t's ``covariance`` option).
    small_sample : {False, True, "cadjust", "cr2"}, default False
        ``True`` / ``"cadjust"``: multiply by G/(G-1) (``cadjust=TRUE`` in sandwich); ``"cr2"``:
        Bell-McCaffrey bias-reduced variance (see the module docstring).
    unit : {"item", "observation", "cluster", "prompt"}
        Units of analysis (``covariance="cluster"`` needs item or observation units).
    missing : {"complete", "pairwise"}, default "complete"
        Only the units scored by every model (the default everywhere in rankci), or
        ``"pairwise"``: available cases.

    Returns
    -------
    MeansCovariance

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640.
    Zeileis, A., Koell, S. and Graham, N. (2020). Various versatile variances: an object-oriented
    implementation of clustered covariances in R. Journal of Statistical Software 95(1), 1-36.
    Bell, R. M. and McCaffrey, D. F. (2002). Bias reduction in standard errors for linear regression
    with multi-stage samples. Survey Methodology 28(2), 169-181.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[1, 0], [1, 1], [0, 0], [1, 0]])
    >>> means_covariance(Scores.from_matrix(x)).cov.round(4).tolist()
    [[0.0469, 0.0156], [0.0156, 0.0469]]
    """
    scores = as_scores(data)
    check_choice("covariance", covariance, COVARIANCES)
    check_choice("unit", unit, UNITS)
    check_choice("missing", missing, MISSING)
    units = scores.units(unit, missing)
    cluster = unit_clusters(scores, units) if covariance == "cluster" else None
    return units_covariance(units, cluster, small_sample=small_sample)


def units_covariance(
    units: UnitScores, groups: np.ndarray | None = None, *, small_sample: bool | str = False
) -> MeansCovariance:
    """:func:`means_covariance` of a units x models matrix; ``groups`` labels each unit's cluster.

    With ``groups=None`` every unit is independent (``kind="item"``); otherwise units sharing a
    label may be dependent (``kind="cluster"``, cluster-robust).

    Parameters
    ----------
    units : UnitScores
    groups : array_like, optional
        A cluster label per unit.
    small_sample : {"auto", False, True, "cadjust", "cr2"}, default False

    Returns
    -------
    MeansCovariance

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640 (Eq. 4).

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> units = Scores.from_matrix(np.array([[1, 0], [1, 1], [0, 0], [1, 0]])).units()
    >>> units_covariance(units, groups=[0, 0, 1, 1]).n_groups
    2
    """
    if not isinstance(units, UnitScores):
        raise ValueError(f"expected UnitScores (Scores.units(...)), got {type(units).__name__}")
    labels = None
    if groups is not None:
        labels = np.asarray(groups)
        if labels.shape != (units.n_units,):
            raise ValueError(
                f"groups must give one cluster label per unit ({units.n_units}), "
                f"got shape {labels.shape}"
            )
    scored = np.isfinite(units.values).sum(axis=0)
    if (scored == 0).any():
        model = units.models[int(np.flatnonzero(scored == 0)[0])]
        raise ValueError(f"model {model!r} has no scored unit, so its mean is undefined")
    grouped = grouped_residuals(units.values, labels, small_sample)
    if grouped.n_groups < 2:
        what = "clusters" if labels is not None else "units"
        raise ValueError(
            f"the covariance of the means needs at least 2 independent {what}, "
            f"got {grouped.n_groups}"
        )
    return MeansCovariance(
        models=units.models,
        mean=grouped.mean,
        cov=grouped.covariance(),
        n=grouped.n.astype(np.int64),
        kind="item" if labels is None else "cluster",
        small_sample=grouped.mode,
        n_groups=grouped.n_groups,
        df=grouped.df,
        unit=units.unit,
        missing=units.missing,
        excluded=dict(units.excluded),
        n_units=units.n_units,
    )
