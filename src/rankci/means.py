"""Model means and their covariance: the input of the max-t rank intervals.

For a units x models matrix ``x`` (NaN = not scored) each model's mean is taken over the units it
has, ``xbar_j = sum_i x_ij / n_j``, and its residuals are ``e_ij = x_ij - xbar_j`` (0 where model j
has no score). The covariance of the means is the sandwich (HC0) estimator

``Sigma_jk = sum_g E_gj E_gk / (n_j n_k)``,

where ``E_gj`` sums the residuals of model j over an independent unit g: the unit itself
(``groups=None``), or a whole cluster of units (cluster-robust, Liang and Zeger 1986). With
``small_sample=True`` (the default) Sigma is multiplied by ``G / (G - 1)``, G the number of
independent units or clusters; with complete data and no clusters this makes
``Sigma_jj + Sigma_kk - 2 Sigma_jk = var(x_j - x_k) / n``, so the studentized differences are
exactly the paired t statistics. ``small_sample=False`` reproduces R's
``sandwich::vcovCL(lm(score ~ 0 + model), type = "HC0", cadjust = FALSE)``.

References
----------
Liang, K.-Y. and Zeger, S. L. (1986). Longitudinal data analysis using generalized linear models.
Biometrika 73(1), 13-22.
Zeileis, A., Koell, S. and Graham, N. (2020). Various versatile variances: an object-oriented
implementation of clustered covariances in R. Journal of Statistical Software 95(1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .data import Scores, UnitScores
from .ranking import _plain

__all__ = ["MeanCovariance", "mean_covariance", "unit_clusters"]


@dataclass(frozen=True, repr=False, eq=False)
class MeanCovariance:
    """Model means and the estimated covariance of those means.

    Attributes
    ----------
    models : tuple of str
    mean : ndarray (M,)
        Each model's mean over the units it has.
    cov : ndarray (M, M)
        Estimated covariance of the means (see the module docstring).
    n : ndarray (M,) of int
        Units behind each mean.
    n_units : int
    n_clusters : int or None
        Independent clusters, when the covariance is cluster-robust.
    n_independent : int or None
        G, the number of independent units or clusters behind Sigma (None when unknown).
    unit, missing : str or None
        How the scores were aggregated (None when the means were given directly).
    small_sample : bool
        Whether the ``G / (G - 1)`` factor was applied.
    excluded : dict
        What was left out before estimation, and why.
    """

    models: tuple[str, ...]
    mean: np.ndarray
    cov: np.ndarray
    n: np.ndarray
    n_units: int
    n_clusters: int | None = None
    n_independent: int | None = None
    unit: str | None = None
    missing: str | None = None
    small_sample: bool = True
    excluded: dict = field(default_factory=dict)

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def se(self) -> np.ndarray:
        """Standard error of each mean, ``sqrt(Sigma_jj)``."""
        return np.sqrt(np.maximum(np.diag(self.cov), 0.0))

    @property
    def covariance_kind(self) -> str:
        return "cluster" if self.n_clusters is not None else "independent"

    def to_frame(self) -> pd.DataFrame:
        """One row per model: model, mean, se, n."""
        return pd.DataFrame(
            {"model": list(self.models), "mean": self.mean, "se": self.se, "n": self.n}
        )

    def to_dict(self) -> dict:
        return _plain(
            {
                "models": list(self.models),
                "mean": self.mean,
                "cov": self.cov,
                "n": self.n,
                "n_units": self.n_units,
                "n_clusters": self.n_clusters,
                "n_independent": self.n_independent,
                "covariance": self.covariance_kind,
                "unit": self.unit,
                "missing": self.missing,
                "small_sample": self.small_sample,
                "excluded": self.excluded,
            }
        )

    def __repr__(self) -> str:
        where = f", {self.n_clusters} clusters" if self.n_clusters is not None else ""
        return (
            f"MeanCovariance({self.n_models} models, {self.n_units} {self.unit or ''} "
            f"units{where}, "
            f"covariance={self.covariance_kind!r}, small_sample={self.small_sample})"
        )


def mean_covariance(
    units: UnitScores,
    groups: Sequence | np.ndarray | None = None,
    *,
    small_sample: bool = True,
) -> MeanCovariance:
    """Model means and their (cluster-robust) sandwich covariance.

    Parameters
    ----------
    units : UnitScores
        From :meth:`Scores.units`; NaN cells (``missing="pairwise"``) are left out model by model.
    groups : array_like, optional
        One cluster label per unit (see :func:`unit_clusters`); units in the same cluster may be
        dependent. None treats every unit as independent.
    small_sample : bool, default True
        Multiply by ``G / (G - 1)`` (G independent units or clusters).

    Returns
    -------
    MeanCovariance

    Notes
    -----
    ``Sigma = E' E / (n n')`` with ``E`` the (units or clusters) x models matrix of residual sums:
    one matrix product, ``O(G M^2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> units = Scores.from_matrix(np.array([[1, 0], [1, 1], [0, 0], [1, 0]])).units()
    >>> est = mean_covariance(units)
    >>> est.mean.tolist(), round(float(est.cov[0, 0]), 4)   # var(x_0) / n = 0.25 / 4
    ([0.75, 0.25], 0.0625)
    """
    if not isinstance(units, UnitScores):
        raise ValueError(f"expected UnitScores (Scores.units(...)), got {type(units).__name__}")
    x = units.values
    finite = np.isfinite(x)
    n = finite.sum(axis=0)
    if (n == 0).any():
        model = units.models[int(np.flatnonzero(n == 0)[0])]
        raise ValueError(f"model {model!r} has no scored unit, so its mean is undefined")
    mean = np.where(finite, x, 0.0).sum(axis=0) / n
    resid = np.where(finite, x - mean, 0.0)
    n_clusters = None
    if groups is None:
        independent = int(finite.any(axis=1).sum())
    else:
        labels = np.asarray(groups)
        if labels.shape != (units.n_units,):
            raise ValueError(
                f"groups must give one cluster label per unit ({units.n_units}), "
                f"got shape {labels.shape}"
            )
        _, codes = np.unique(labels, return_inverse=True)
        resid = _sum_by_group(resid, codes)
        independent = n_clusters = int(resid.shape[0])
    if independent < 2:
        what = "clusters" if groups is not None else "units"
        raise ValueError(
            f"the covariance of the means needs at least 2 independent {what}, got {independent}"
        )
    cov = resid.T @ resid / np.outer(n, n).astype(float)
    if small_sample:
        cov *= independent / (independent - 1.0)
    cov = (cov + cov.T) / 2.0
    return MeanCovariance(
        models=tuple(units.models),
        mean=mean,
        cov=cov,
        n=n.astype(np.int64),
        n_units=units.n_units,
        n_clusters=n_clusters,
        n_independent=independent,
        unit=units.unit,
        missing=units.missing,
        small_sample=bool(small_sample),
        excluded=dict(units.excluded),
    )


def _sum_by_group(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Row sums of ``values`` within each group code (groups in code order)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    return np.add.reduceat(values[order], starts, axis=0)


def unit_clusters(scores: Scores, units: UnitScores) -> np.ndarray:
    """The cluster label of every unit of ``units`` (aggregated from ``scores``).

    Defined for ``unit="item"`` and ``unit="observation"``, whose units are nested in the
    clusters; cluster and prompt units are not.
    """
    if scores.clusters is None:
        raise ValueError(
            "a cluster-robust covariance needs a cluster column (subject, category, task, ...)"
        )
    if units.unit == "item":
        index = {item: k for k, item in enumerate(scores.items)}
        try:
            codes = np.array([index[label] for label in units.labels], dtype=np.int64)
        except KeyError as error:
            raise ValueError(f"unit {error.args[0]!r} is not an item of these scores") from None
        item_codes = codes
    elif units.unit == "observation":
        matrix, item_codes, _ = scores.observation_matrix()
        if units.missing == "complete":
            item_codes = item_codes[np.isfinite(matrix).all(axis=1)]
        if item_codes.size != units.n_units:
            raise ValueError("these units were not aggregated from these scores")
    else:
        raise ValueError(
            f"a cluster-robust covariance needs units nested in clusters (unit='item' or "
            f"'observation'), got unit={units.unit!r}"
        )
    return np.asarray(scores.clusters, dtype=object)[scores.item_cluster[item_codes]]
