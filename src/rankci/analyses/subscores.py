"""Per-cluster subscores: every model's score and interval within each cluster (category).

The source's advice for models that the overall leaderboard cannot separate: "use the per-task-
category subscores to see if one model has a specific strength in your task family". Within a
cluster the units (items) are the independent draws, so the cluster methods fall back to their
item-level counterparts (``cluster`` -> ``normal``, ``cluster-bootstrap`` -> ``bootstrap``), and
``auto`` is the method it stands for on the whole data (``clopper-pearson`` on 0/1 scores); the
result records the method actually used. Each cluster's intervals, overlap flags and paired verdict
hold at level alpha for that cluster on its own (no correction across clusters).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rankci._base import (
    check_alpha,
    check_choice,
    check_positive_int,
    jsonable,
    seeded_generator,
)
from rankci.analyses.intervals import (
    AUTO_RULE,
    METHODS,
    ScoreIntervals,
    build_intervals,
    interval_arrays,
    resampling_options,
    resolve_method,
    warn_degenerate,
)
from rankci.data import MISSING, Scores, UnitScores
from rankci.evidence.covariance import unit_clusters
from rankci.io import as_scores

WITHIN_CLUSTER = {
    "normal": "normal",
    "cluster": "normal",
    "bootstrap": "bootstrap",
    "bca": "bca",
    "cluster-bootstrap": "bootstrap",
    "cluster-wild": "normal",
    "wilson": "wilson",
    "clopper-pearson": "clopper-pearson",
}
SUBSCORE_UNITS = ("item", "observation")

__all__ = ["SubScores", "subscores"]


@dataclass(frozen=True, repr=False, eq=False)
class SubScores:
    """Score intervals computed within each cluster.

    Attributes
    ----------
    intervals : dict of str to ScoreIntervals
        One result per cluster, in cluster order.
    method : str
        The method asked for; ``within_method`` is the one used inside each cluster.
    within_method : str
    alpha : float
    excluded : dict
        What was left out before splitting into clusters, and why.
    """

    intervals: dict
    method: str
    within_method: str
    alpha: float
    excluded: dict = field(default_factory=dict)

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(self.intervals)

    def to_frame(self) -> pd.DataFrame:
        """Long table: cluster, model, score, se, lower, upper, n (best first within a cluster)."""
        frames = [r.to_frame().assign(cluster=name) for name, r in self.intervals.items()]
        frame = pd.concat(frames, ignore_index=True)
        return frame[["cluster", *[c for c in frame.columns if c != "cluster"]]]

    def to_dict(self, pairs: bool = False) -> dict:
        """JSON-safe; each cluster's relations in the compact form of ``ScoreIntervals.to_dict``
        (name pairs with ``pairs=True``)."""
        clusters = []
        for name, result in self.intervals.items():
            entry = result.to_dict(pairs=pairs)
            for key in ("method", "alpha", "unit", "missing", "excluded", "guarantee"):
                entry.pop(key, None)
            clusters.append({"cluster": name, **entry})
        return {
            "method": self.method,
            "within_cluster_method": self.within_method,
            "alpha": self.alpha,
            "excluded": jsonable(self.excluded),
            "clusters": clusters,
        }

    def __repr__(self) -> str:
        return (
            f"SubScores({len(self.intervals)} clusters, method={self.within_method!r}, "
            f"alpha={self.alpha:g})"
        )


def subscores(
    data: Scores | pd.DataFrame | str | os.PathLike,
    method: str = "auto",
    *,
    alpha: float = 0.05,
    reps: int = 1000,
    rng: int | np.random.Generator | None = None,
    unit: str = "item",
    missing: str = "complete",
    verdict: bool = True,
) -> SubScores:
    """Every model's score interval within each cluster (category subscores).

    The options are those of :func:`rankci.analyses.intervals.score_intervals`; the data need a
    cluster column and item or observation units. The random generator is shared across clusters
    in cluster order, so one seed gives one answer.

    Parameters
    ----------
    data : Scores, DataFrame or path
        Scores with a cluster column.
    method : {"auto", "bootstrap", "bca", "normal", "cluster", "cluster-bootstrap", \
"cluster-wild", "wilson", "clopper-pearson"}
        As in :func:`score_intervals`; within a cluster ``cluster`` and ``cluster-wild`` fall
        back to ``normal`` and ``cluster-bootstrap`` to ``bootstrap``; ``"auto"`` (default) is
        ``"clopper-pearson"`` when every score is 0 or 1 and ``"bootstrap"`` otherwise.
    alpha : float, default 0.05
        Each interval (and each cluster's paired verdict) holds at level ``alpha`` for its cluster.
    reps : int, default 1000
        Resamples for the bootstrap methods.
    rng : int, Generator or None
        Seed, shared across clusters in cluster order.
    unit : {"item", "observation"}
        Units of analysis within a cluster.
    missing : {"pairwise", "complete"}
        As in :func:`score_intervals`.
    verdict : bool, default True
        Also run each cluster's paired verdict (paired tests + Holm).

    Returns
    -------
    SubScores

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640.
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
    New York.

    Examples
    --------
    >>> import rankci
    >>> sub = subscores(rankci.datasets.load_chembench(), verdict=False)
    >>> sub.to_frame().columns.tolist()
    ['cluster', 'model', 'score', 'se', 'lower', 'upper', 'n']
    >>> sub.within_method                   # ChemBench's scores are 0/1
    'clopper-pearson'
    """
    scores = as_scores(data)
    check_choice("method", method, METHODS)
    alpha = check_alpha(alpha)
    check_choice("unit", unit, SUBSCORE_UNITS)
    check_choice("missing", missing, MISSING)
    reps = check_positive_int(reps, "reps", minimum=2)
    if scores.clusters is None:
        raise ValueError(
            "per-cluster subscores need a cluster column (subject, category, task, ...)"
        )
    seed, generator = seeded_generator(rng)
    units = scores.units(unit, missing)
    within = WITHIN_CLUSTER[resolve_method(method, units.binary)]
    codes = unit_clusters(scores, units)
    labels = np.asarray(units.labels, dtype=object)
    options: dict = {}
    if within in ("bootstrap", "bca"):
        options = resampling_options(reps, seed)
    if method == "auto":
        options["method_rule"] = AUTO_RULE
    results: dict[str, ScoreIntervals] = {}
    for code in np.unique(codes):
        rows = codes == code
        values = units.values[rows]
        finite = values[np.isfinite(values)]
        part = UnitScores(
            values=values,
            models=units.models,
            labels=tuple(labels[rows]),
            unit=units.unit,
            missing=units.missing,
            excluded={},
            binary=bool(np.all((finite == 0) | (finite == 1))),
            cluster=scores.clusters[code],
        )
        arrays = interval_arrays(values, within, alpha, reps=reps, generator=generator, unit=unit)
        results[scores.clusters[code]] = build_intervals(
            part, arrays, within, alpha, dict(options), verdict, None, False, warn=False
        )
    flat = [(m, c) for c, part in results.items() for m in part.degenerate]
    if flat:
        first = results[flat[0][1]].degenerate[flat[0][0]]
        warn_degenerate(flat, within, first, stacklevel=3)
    return SubScores(
        intervals=results,
        method=method,
        within_method=within,
        alpha=alpha,
        excluded=dict(units.excluded),
    )
