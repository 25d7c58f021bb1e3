"""How many items are enough: interval width and pairwise resolution as the benchmark grows.

From pilot data, estimate the per-unit covariance of the models' scores,
``V = Sigma * n_j n_l / n_jl * G/(G-1)`` (Sigma the covariance of the means from
:func:`rankci.means_covariance`, item-level or cluster-robust; ``n_jl`` the units a pair shares;
G the number of groups), so that with n units the means have covariance ``V / n``. Then, with
``z = Phi^-1(1 - alpha/2)``:

* expected interval width at n units: ``w_j(n) = 2 z sqrt(V_jj / n)``; the units needed for width
  W: ``n = ceil((2 z)^2 V_jj / W^2)``;
* a pair (j, l) with difference ``D = mean_j - mean_l`` and ``s_jl^2 = V_jj + V_ll - 2 V_jl`` is
  separated by a two-sided level-alpha' test with probability
  ``P(n) = Phi(|D| sqrt(n) / s_jl - z')``, ``z' = Phi^-1(1 - alpha'/2)``; the units needed for
  power ``1 - beta``: ``n = ceil(((z' + z_{1-beta}) s_jl / |D|)^2)``.

``alpha' = alpha`` for a pair on its own (``multiplicity="none"``) or ``alpha / (M(M-1)/2)``
(``"bonferroni"``: the first step of Holm over all pairs, a conservative stand-in for the
simultaneous ranking of :func:`rankci.rank`). With ``covariance="cluster"`` the variance includes
the design effect of the pilot's clusters: the answer assumes that new items come in clusters like
the pilot's (about ``n / mean cluster size`` clusters).

Caveat: the pilot's differences D are estimates; plugging them in overstates the power for pairs
whose observed gap is lucky (winner's curse). Pass ``difference=`` (the smallest gap worth
detecting) for a planning target that does not depend on the pilot's noise.

References
----------
Miller, E. (2024). Adding error bars to evals, Sec. 5 (power analysis). arXiv:2411.00640.
Chow, S.-C., Shao, J. and Wang, H. (2008). Sample Size Calculations in Clinical Research, Ch. 3.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import check_alpha, check_choice, check_positive_int, jsonable
from rankci.data import Scores
from rankci.evidence.covariance import covariance_of_means, unit_clusters
from rankci.io import as_scores
from rankci.leaderboard import apply_trials, resolve_spec
from rankci.method import COVARIANCES, MethodSpec

MULTIPLICITY = ("none", "bonferroni")

__all__ = ["Plan", "plan"]


def _as_sizes(n) -> np.ndarray:
    sizes = np.atleast_1d(np.asarray(n, dtype=float))
    if sizes.size == 0 or not np.all(np.isfinite(sizes)) or np.any(sizes < 2):
        raise ValueError(f"numbers of items must be finite and >= 2, got {n!r}")
    return sizes


@dataclass(frozen=True, repr=False, eq=False)
class Plan:
    """Pilot-based planning: expected interval widths and pairwise resolution against n.

    Attributes
    ----------
    models : tuple of str
    score : ndarray (M,)
        Pilot scores.
    unit_cov : ndarray (M, M)
        Per-unit covariance V (the means at n units have covariance V / n).
    n : ndarray (M,) of int
        Pilot units per model.
    kind : {"item", "cluster"}
        Items independent, or clustered (``plan(covariance=...)``: "independent" gives "item").
    alpha, power : float
    multiplicity : {"none", "bonferroni"}
    n_groups : int
        Pilot units (``kind="item"``) or clusters (``kind="cluster"``).
    mean_cluster_size : float or None
    unit, missing : str
    spec : MethodSpec or None
        The method (unit, missing, alpha): ``plan(data, spec=p.spec)`` plans the same way.
    """

    models: tuple[str, ...]
    score: np.ndarray
    unit_cov: np.ndarray
    n: np.ndarray
    kind: str
    alpha: float
    power: float
    multiplicity: str
    n_groups: int
    mean_cluster_size: float | None = None
    unit: str = "item"
    missing: str = "complete"
    excluded: dict = field(default_factory=dict)
    spec: MethodSpec | None = None

    @property
    def covariance(self) -> str:
        """``"independent"`` or ``"cluster"``: the ``covariance`` the plan was made with."""
        return "cluster" if self.kind == "cluster" else "independent"

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_pilot(self) -> int:
        return int(self.n.max())

    def _index(self, model: str) -> int:
        try:
            return self.models.index(str(model))
        except ValueError:
            raise ValueError(f"unknown model {model!r}") from None

    def _pair_level(self) -> float:
        """Two-sided level of each pairwise test."""
        pairs = self.n_models * (self.n_models - 1) / 2
        return self.alpha / pairs if self.multiplicity == "bonferroni" else self.alpha

    @property
    def sd(self) -> np.ndarray:
        """Per-unit standard deviation of each model's scores, ``sqrt(V_jj)``."""
        return np.sqrt(np.diag(self.unit_cov))

    def difference_sd(self) -> np.ndarray:
        """M x M per-unit SD of the paired difference, ``sqrt(V_jj + V_ll - 2 V_jl)``."""
        diag = np.diag(self.unit_cov)
        return np.sqrt(np.maximum(diag[:, None] + diag[None, :] - 2.0 * self.unit_cov, 0.0))

    def width(self, n) -> np.ndarray:
        """Expected interval width ``2 z sqrt(V_jj / n)``: shape (M,) for one n, (len(n), M)."""
        z = special.ndtri(1.0 - self.alpha / 2.0)
        sizes = _as_sizes(n)
        out = 2.0 * z * self.sd[None, :] / np.sqrt(sizes[:, None])
        return out[0] if np.ndim(n) == 0 else out

    def items_for_width(self, width: float) -> np.ndarray:
        """Units each model needs for an interval at most ``width`` wide."""
        if not (isinstance(width, (int, float, np.floating)) and np.isfinite(width) and width > 0):
            raise ValueError(f"target width must be a positive number, got {width!r}")
        z = special.ndtri(1.0 - self.alpha / 2.0)
        return np.maximum(np.ceil((2.0 * z * self.sd / width) ** 2), 2).astype(np.int64)

    def separation_probability(self, n, difference: float | None = None) -> np.ndarray:
        """M x M probability that each pair is separated (in the pilot's direction) with n units.

        ``Phi(|D| sqrt(n) / s_jl - z')``; ``difference`` replaces every |D| by one gap.
        Shape (M, M) for one n, (len(n), M, M) for several.
        """
        sizes = _as_sizes(n)
        gap = np.abs(self.score[:, None] - self.score[None, :])
        if difference is not None:
            gap = np.full(gap.shape, abs(float(difference)))
        z = special.ndtri(1.0 - self._pair_level() / 2.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            signal = gap[None] * np.sqrt(sizes)[:, None, None] / self.difference_sd()[None]
        prob = special.ndtr(np.where(gap[None] > 0, signal, -np.inf) - z)
        for matrix in prob:
            np.fill_diagonal(matrix, np.nan)
        return prob[0] if np.ndim(n) == 0 else prob

    def _needed(self, gap: np.ndarray, sd: np.ndarray, power: float) -> np.ndarray:
        """``ceil(((z' + z_power) sd / gap)^2)`` (at least 2), inf where the gap is 0."""
        z = special.ndtri(1.0 - self._pair_level() / 2.0) + special.ndtri(power)
        with np.errstate(invalid="ignore", divide="ignore"):
            needed = np.maximum(np.ceil((z * sd / gap) ** 2), 2.0)
        return np.where(gap > 0, needed, np.inf)

    def items_to_separate(
        self, a: str, b: str, *, difference: float | None = None, power: float | None = None
    ) -> float:
        """Units needed to separate models a and b with the plan's power (inf if D = 0).

        ``ceil(((z' + z_power) s_ab / |D|)^2)``, with D the pilot difference or ``difference``.
        """
        j, l = self._index(a), self._index(b)
        if j == l:
            raise ValueError(f"a pair needs two different models, got {a!r} twice")
        power = self.power if power is None else check_alpha(power, "power")
        gap = abs(self.score[j] - self.score[l]) if difference is None else abs(float(difference))
        return float(self._needed(np.array(gap), self.difference_sd()[j, l], power))

    def curve(self, ns: Sequence[int]) -> pd.DataFrame:
        """Expected width of every model's interval at each n: columns n, model, se, width."""
        sizes = _as_sizes(ns)
        widths = self.width(sizes)
        se = self.sd[None, :] / np.sqrt(sizes[:, None])
        return pd.DataFrame(
            {
                "n": np.repeat(sizes.astype(np.int64), self.n_models),
                "model": np.tile(np.asarray(self.models, dtype=object), sizes.size),
                "se": se.ravel(),
                "width": widths.ravel(),
            }
        )

    def resolution(self, ns: Sequence[int], difference: float | None = None) -> pd.DataFrame:
        """Per n: pairs expected to separate (probability >= power) and the expected count."""
        sizes = _as_sizes(ns)
        prob = self.separation_probability(sizes, difference)
        upper = np.triu(np.ones((self.n_models, self.n_models), dtype=bool), 1)
        values = prob[:, upper]
        return pd.DataFrame(
            {
                "n": sizes.astype(np.int64),
                "pairs": int(upper.sum()),
                "separated_at_power": (values >= self.power).sum(axis=1),
                "expected_separated": values.sum(axis=1),
            }
        )

    def pairs_frame(self, n: int, difference: float | None = None) -> pd.DataFrame:
        """Every pair (higher pilot score first): difference, sd, probability at n, n needed."""
        prob = self.separation_probability(float(n), difference)
        order = np.lexsort((np.asarray(self.models), -self.score))
        x, y = np.triu_indices(self.n_models, 1)
        j, l = order[x], order[y]
        sd = self.difference_sd()[j, l]
        gap = self.score[j] - self.score[l]
        target = np.abs(gap) if difference is None else np.full(gap.shape, abs(float(difference)))
        names = np.asarray(self.models, dtype=object)
        return pd.DataFrame(
            {
                "first": names[j],
                "second": names[l],
                "difference": gap,
                "sd": sd,
                "probability": prob[j, l],
                "items_needed": self._needed(target, sd, self.power),
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per model (best pilot score first): score, per-unit sd, pilot n and width."""
        order = np.lexsort((np.asarray(self.models), -self.score))
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[order],
                "score": self.score[order],
                "sd": self.sd[order],
                "n": self.n[order],
                "width": (2.0 * special.ndtri(1 - self.alpha / 2) * self.sd / np.sqrt(self.n))[
                    order
                ],
            }
        )

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "alpha": self.alpha,
            "power": self.power,
            "multiplicity": self.multiplicity,
            "unit": self.unit,
            "missing": self.missing,
            "n_groups": int(self.n_groups),
            "mean_cluster_size": self.mean_cluster_size,
            "models": [
                {k: jsonable(v) for k, v in row.items()}
                for row in self.to_frame().to_dict(orient="records")
            ],
            "excluded": jsonable(self.excluded),
            "covariance": self.covariance,
            **({"spec": self.spec.to_dict()} if self.spec is not None else {}),
        }

    def __repr__(self) -> str:
        return (
            f"Plan({self.n_models} models, pilot n={self.n_pilot}, kind={self.kind!r}, "
            f"alpha={self.alpha:g}, power={self.power:g}, multiplicity={self.multiplicity!r})"
        )


def plan(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    covariance: str = "independent",
    alpha: float = 0.05,
    power: float = 0.8,
    multiplicity: str = "none",
    unit: str = "item",
    missing: str = "complete",
    spec: MethodSpec | None = None,
) -> Plan:
    """Plan the number of items from pilot data (see the module docstring for the formulas).

    Parameters
    ----------
    data : Scores, DataFrame or path
        Pilot per-item scores.
    covariance : {"independent", "cluster"}
        Items independent, or clustered (needs a cluster column; new items come in clusters like
        the pilot's): the cluster-robust covariance of the means, as ``rankci rank --covariance
        cluster`` (``rankci plan --covariance``).
    alpha : float, default 0.05
    power : float, default 0.8
        Probability of separating a pair that :meth:`Plan.items_to_separate` aims for.
    multiplicity : {"none", "bonferroni"}
        Test each pair at alpha, or at alpha over all M(M-1)/2 pairs.
    unit, missing : str
        As :func:`rankci.analyses.intervals.score_intervals`.
    spec : MethodSpec, optional
        The method at once (its unit, missing and alpha), for example ``ranking.spec``; then pass
        none of those keywords. ``covariance``, ``power`` and ``multiplicity`` are the plan's own.

    Returns
    -------
    Plan
        ``plan.spec`` is the validated :class:`~rankci.method.MethodSpec`.

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640, Sec. 5 (power analysis).
    Chow, S.-C., Shao, J. and Wang, H. (2008). Sample Size Calculations in Clinical Research, 2nd
    ed., Ch. 3. Chapman & Hall/CRC, Boca Raton.

    Examples
    --------
    >>> import rankci
    >>> p = plan(rankci.datasets.load_mmlu_pro())
    >>> bool(p.width(4 * p.n_pilot)[0] < p.width(p.n_pilot)[0])
    True
    >>> again = plan(rankci.datasets.load_mmlu_pro(), spec=p.spec)
    >>> again.width(100).tolist() == p.width(100).tolist()
    True
    """
    check_choice("covariance", covariance, COVARIANCES)
    kind = "cluster" if covariance == "cluster" else "item"
    keywords = {"alpha": alpha, "unit": unit, "missing": missing}
    spec, _ = resolve_spec(spec, None, keywords, {}, "plan", accepted=_KEYWORDS)
    alpha, unit, missing = spec.alpha, spec.unit, spec.missing
    spec, scores = apply_trials(spec, as_scores(data), "plan")
    power = check_alpha(power, "power")
    check_choice("multiplicity", multiplicity, MULTIPLICITY)
    units = scores.units(unit, missing)
    cluster = unit_clusters(scores, units) if kind == "cluster" else None
    mean, cov, n, n_groups = covariance_of_means(units.values, cluster, small_sample=True)
    finite = np.isfinite(units.values)
    if finite.all():
        shared = np.full((units.n_models, units.n_models), float(units.n_units))
    else:
        shared = finite.T.astype(float) @ finite.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit_cov = np.where(shared > 0, cov * np.outer(n, n) / shared, 0.0)
    if np.any(n < 2):
        short = units.models[int(np.argmax(n < 2))]
        raise ValueError(f"model {short!r} has fewer than 2 pilot units; nothing to plan from")
    size = None
    if cluster is not None:
        size = float(units.n_units / np.unique(cluster).size)
    check_positive_int(int(n_groups), "number of groups", minimum=2)
    return Plan(
        models=units.models,
        score=mean,
        unit_cov=unit_cov,
        n=n.astype(np.int64),
        kind=kind,
        alpha=alpha,
        power=power,
        multiplicity=multiplicity,
        n_groups=int(n_groups),
        mean_cluster_size=size,
        unit=unit,
        missing=missing,
        excluded=dict(units.excluded),
        spec=spec,
    )


#: the keywords of plan, for the message on an unknown one
_KEYWORDS = "data, covariance, alpha, power, multiplicity, unit, missing, spec"
