"""The Ranking result and the one piece of code that turns certified dominances into it.

Every method in rankci ends in a set D of certified statements "model j is better than model l"
(a strict partial order). From D, after transitive closure (DESIGN.md, "Counting"):

* ``L_j = 1 + #{l : (l, j) in D}``   (models certified better than j)
* ``U_j = M - #{l : (j, l) in D}``   (models certified worse than j)
* top-k: certified inside when ``U_j <= k``, certified outside when ``L_j > k``
* ``tier(j) = 1 + max{tier(l) : (l, j) in D}`` (1 when nothing is certified above j); a model in
  tier s has true rank s or worse.

Rank 1 is best; the true rank of j is ``1 + #{l : theta_l > theta_j}``, so tied models share the
better rank. A cycle in D is an error (:class:`DominanceCycleError`), never silently broken.

Builders from pairwise p-values:

* :func:`simultaneous_ranking` (Algorithm 2 of the source): one family of all M(M-1) ordered pairs
  at level alpha; with probability >= 1 - alpha every statement holds at once.
* :func:`marginal_ranking` (Algorithm 1): for each model j, one family of the M - 1 hypotheses
  "l better than j" and one of "j better than l", each at alpha/2; each model's interval covers
  its true rank with probability >= 1 - alpha, but not jointly.

References
----------
Holm, S. (2013). Confidence intervals for ranks. Unpublished manuscript.
Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
ranks with application to ranking institutions. Biometrics 78(1), 238-247.
Neuhof, B. and Benjamini, Y. (2024). Confidence intervals for ranks: theory and practice.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rankci._base import check_positive_int, jsonable, renamed_keyword
from rankci.method import COVERAGES, UNIT_SCOPE, MethodSpec

if TYPE_CHECKING:
    from rankci.evidence.pairwise import Pairwise

__all__ = [
    "COVERAGES",
    "DominanceCycleError",
    "Ranking",
    "UNIT_SCOPE",
    "observed_ranks",
    "ranking_from_dominance",
    "tiers",
    "transitive_closure",
]


class DominanceCycleError(ValueError):
    """The certified statements contradict each other (j above l above ... above j).

    ``models`` names the models on the cycle.
    """

    def __init__(self, message: str, models: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.models = tuple(models)


@dataclass(frozen=True, repr=False, eq=False)
class Ranking:
    """A leaderboard with rank intervals, certified dominances, top-k status and tiers.

    Attributes
    ----------
    models : tuple of str
        Model labels, in the order of every per-model array.
    score : ndarray (M,)
        Observed score (mean over units).
    rank : ndarray (M,) of int
        Observed rank, ``1 + #{l : score_l > score_j}`` (ties share the better rank).
    lower, upper : ndarray (M,) of int
        Rank interval ``[L_j, U_j]``.
    dominance : ndarray (M, M) of bool or None
        ``dominance[j, l]``: "j is better than l" is certified (transitively closed). None for
        marginal coverage, which makes no joint statements.
    tier : ndarray (M,) of int or None
        Tier of each model (None for marginal coverage).
    alpha : float
    coverage : str
        ``"simultaneous"``, ``"marginal"`` or ``"anytime"``.
    procedure : dict
        The procedure in brief, as the top of the JSON output shows it (test, unit, delta,
        multiplicity, ... for fixed-sample rankings; sampling, bet, certifier for the monitor).
    n_units : int
    excluded : dict
        What was left out and why (JSON-safe).
    guarantee : str
        The guarantee in plain words.
    pairwise : Pairwise or None
        The evidence behind the ranking, when it came from pairwise tests.
    details : dict
        Method-specific extras (JSON-safe), for example dropped clusters or rank sets.
    spec : MethodSpec or None
        The validated method specification the ranking was computed with (fixed-sample rankings
        from :func:`rankci.rank`); ``rankci.rank(data, spec=ranking.spec)`` computes it again.
        None for rankings made another way (the monitor, the mixed model, given dominances).
    """

    models: tuple[str, ...]
    score: np.ndarray
    rank: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    dominance: np.ndarray | None
    tier: np.ndarray | None
    alpha: float
    coverage: str
    procedure: dict
    n_units: int
    excluded: dict
    guarantee: str
    pairwise: Pairwise | None = None
    details: dict = field(default_factory=dict)
    spec: MethodSpec | None = None

    @property
    def method(self) -> dict:
        """Deprecated name of :attr:`procedure` ("method" now names one choice of an analysis)."""
        warnings.warn(
            "Ranking.method is deprecated; use Ranking.procedure (the summary) or Ranking.spec "
            "(the full method specification)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.procedure

    @property
    def n_models(self) -> int:
        return len(self.models)

    def order(self) -> np.ndarray:
        """Model indices, best observed score first (ties by name)."""
        names = np.asarray(self.models)
        return np.lexsort((names, -np.asarray(self.score, dtype=float)))

    def top_k(self, k: int) -> np.ndarray:
        """Per model: ``"in"`` (certified in the top k), ``"out"`` or ``"undetermined"``."""
        k = check_positive_int(k, "k")
        status = np.full(self.n_models, "undetermined", dtype=object)
        status[self.upper <= k] = "in"
        status[self.lower > k] = "out"
        return status

    def dominance_pairs(self) -> list[tuple[str, str]]:
        """Every certified "first better than second", best first model first."""
        if self.dominance is None:
            return []
        position = np.empty(self.n_models, dtype=int)
        position[self.order()] = np.arange(self.n_models)
        j, l = np.nonzero(self.dominance)
        keys = np.lexsort((position[l], position[j]))
        return [(self.models[a], self.models[b]) for a, b in zip(j[keys], l[keys])]

    def to_frame(self, k: int | None = None) -> pd.DataFrame:
        """One row per model, best first.

        Columns: model, score, rank, rank_lower, rank_upper, tier (and top_k when k is given).
        """
        idx = self.order()
        frame = pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[idx],
                "score": np.asarray(self.score, dtype=float)[idx],
                "rank": self.rank[idx],
                "rank_lower": self.lower[idx],
                "rank_upper": self.upper[idx],
                "tier": (self.tier[idx] if self.tier is not None else pd.array([None] * len(idx))),
            }
        )
        if k is not None:
            frame[f"top_{k}"] = self.top_k(k)[idx]
        return frame

    def to_dict(self, k: int | None = None) -> dict:
        """JSON-safe summary, following the schema of ``rankci rank --format json``."""
        rows = []
        for record in self.to_frame(k).to_dict(orient="records"):
            rows.append(
                {
                    key: (None if value is None or value is pd.NA else jsonable(value))
                    for key, value in record.items()
                }
            )
        out = {
            "alpha": self.alpha,
            "coverage": self.coverage,
            **{key: jsonable(value) for key, value in self.procedure.items()},
            "n_units": int(self.n_units),
            "excluded": jsonable(self.excluded),
            "models": rows,
            "dominance": (
                [list(pair) for pair in self.dominance_pairs()]
                if self.dominance is not None
                else None
            ),
            "guarantee": self.guarantee,
        }
        if k is not None:
            out["k"] = int(k)
        if self.details:
            out["details"] = jsonable(self.details)
        if self.spec is not None:
            out["spec"] = self.spec.to_dict()
        return out

    def __repr__(self) -> str:
        frame = self.to_frame()
        lines = [
            f"Ranking({self.n_models} models, coverage={self.coverage!r}, alpha={self.alpha:g}, "
            f"n_units={self.n_units})"
        ]
        width = max(len("model"), *(len(m) for m in frame["model"]))
        lines.append(f"  {'model':<{width}}  score   rank  interval   tier")
        for row in frame.itertuples(index=False):
            tier = "-" if row.tier is None or row.tier is pd.NA else str(row.tier)
            interval = f"[{row.rank_lower}, {row.rank_upper}]"
            lines.append(
                f"  {row.model:<{width}}  {row.score:.4f}  {row.rank:>4}  {interval:<9}  {tier:>4}"
            )
        return "\n".join(lines)


# ---------------------------------------------------------------------- counting
def transitive_closure(dominance: np.ndarray, models: Sequence[str] | None = None) -> np.ndarray:
    """The transitive closure of a strict order given as an M x M boolean matrix.

    Paths are composed by boolean matrix products (``R <- R or R @ R``) until nothing changes,
    so a closure needs about log2(longest chain) products, and a relation that is already closed
    costs one. Raises :class:`DominanceCycleError` naming the models on a cycle.
    """
    closed = np.asarray(dominance, dtype=bool).copy()
    if closed.ndim != 2 or closed.shape[0] != closed.shape[1]:
        raise ValueError(f"dominance must be a square matrix, got shape {closed.shape}")
    while True:
        middle = np.flatnonzero(closed.any(axis=0) & closed.any(axis=1))
        if middle.size == 0:
            break
        a = closed[:, middle].astype(np.float32)
        b = closed[middle, :].astype(np.float32)
        grown = closed | (a @ b > 0.5)
        if np.array_equal(grown, closed):
            break
        closed = grown
    on_cycle = np.flatnonzero(np.diag(closed))
    if on_cycle.size:
        names = models if models is not None else [str(i) for i in range(closed.shape[0])]
        first = on_cycle[0]
        members = [names[i] for i in on_cycle if closed[first, i] and closed[i, first]]
        raise DominanceCycleError(
            "the certified statements form a cycle among models "
            + ", ".join(repr(m) for m in members)
            + "; at least one of them is false (this happens with probability at most alpha), "
            "so no ranking can be reported from them",
            members,
        )
    return closed


def tiers(closed: np.ndarray) -> np.ndarray:
    """Longest chain of certified dominances ending at each model, plus one.

    In a closed acyclic relation, l above j implies that l has strictly fewer models above it
    than j, so models are processed in batches of equal in-degree.
    """
    closed = np.asarray(closed, dtype=bool)
    above = closed.sum(axis=0)
    tier = np.ones(closed.shape[0], dtype=np.int64)
    for count in np.unique(above):
        if count == 0:
            continue
        batch = np.flatnonzero(above == count)
        tier[batch] = 1 + (closed[:, batch] * tier[:, None]).max(axis=0)
    return tier


def observed_ranks(score: np.ndarray) -> np.ndarray:
    """``1 + #{l : score_l > score_j}``: tied scores share the better rank."""
    score = np.asarray(score, dtype=float)
    ordered = np.sort(score)
    return 1 + (score.size - np.searchsorted(ordered, score, side="right"))


def ranking_from_dominance(
    models: Sequence[str],
    score: np.ndarray,
    dominance: np.ndarray,
    *,
    alpha: float,
    coverage: str,
    procedure: dict | None = None,
    n_units: int,
    excluded: dict,
    guarantee: str,
    pairwise: Pairwise | None = None,
    details: dict | None = None,
    spec: MethodSpec | None = None,
    **deprecated,
) -> Ranking:
    """The shared counting step: closure of D, then rank intervals and tiers.

    Parameters
    ----------
    models : sequence of str
    score : array_like (M,)
        Observed scores (their order gives the observed ranks).
    dominance : array_like (M, M) of bool
        ``dominance[j, l]``: "j is better than l" is certified. It is closed transitively here.
    alpha, coverage, procedure, n_units, excluded, guarantee, pairwise, details, spec
        Stored on the :class:`Ranking` as they are.

    Returns
    -------
    Ranking
        ``L_j = 1 + #{l : (l, j) in D}``, ``U_j = M - #{l : (j, l) in D}`` and the tiers.

    Raises
    ------
    DominanceCycleError
        When D holds a cycle.

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals
    for ranks with application to ranking institutions. Biometrics 78(1), 238-247.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.zeros((3, 3), dtype=bool); d[0, 1] = d[1, 2] = True
    >>> r = ranking_from_dominance(["a", "b", "c"], [0.9, 0.5, 0.1], d, alpha=0.05,
    ...                            coverage="simultaneous", procedure={}, n_units=10,
    ...                            excluded={}, guarantee="")
    >>> r.lower.tolist(), r.upper.tolist(), r.tier.tolist()
    ([1, 2, 3], [1, 2, 3], [1, 2, 3])
    """
    procedure = renamed_keyword(
        "ranking_from_dominance", procedure, deprecated, "method", "procedure"
    )
    models = tuple(models)
    closed = transitive_closure(dominance, models)
    m = len(models)
    return Ranking(
        models=models,
        score=np.asarray(score, dtype=float),
        rank=observed_ranks(score),
        lower=1 + closed.sum(axis=0),
        upper=m - closed.sum(axis=1),
        dominance=closed,
        tier=tiers(closed),
        alpha=alpha,
        coverage=coverage,
        procedure=dict(procedure or {}),
        n_units=n_units,
        excluded=dict(excluded),
        guarantee=guarantee,
        pairwise=pairwise,
        details=dict(details or {}),
        spec=spec,
    )
