"""The one interface of every fixed-sample certifier: what it certified, and at what level.

A certifier turns pairwise evidence into certified statements. :class:`Certification` is what
every one of them returns (Holm and Bonferroni in :mod:`rankci.certify.holm`, max-t in
:mod:`rankci.certify.maxt`):

* with **simultaneous** coverage, a set D of certified dominances "j is better than l", all true
  together with probability >= 1 - alpha; :meth:`Certification.ranking` then counts
  (:func:`rankci.ranking.ranking_from_dominance`);
* with **marginal** coverage, each model's own bounds ``[L_j, U_j]``, each covering its model's
  true rank with probability >= 1 - alpha; no joint statement, so no D.

Adding a certifier means writing one function that returns a Certification; the counting, the
guarantee in words and the Ranking come from here.

References
----------
Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
ranks with application to ranking institutions. Biometrics 78(1), 238-247.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rankci.method import COVERAGES, MethodSpec
from rankci.ranking import Ranking, observed_ranks, ranking_from_dominance

if TYPE_CHECKING:
    from rankci.evidence.pairwise import Pairwise

__all__ = ["Certification"]


@dataclass(frozen=True, repr=False, eq=False)
class Certification:
    """Certified statements from pairwise evidence, with the words of their guarantee.

    Attributes
    ----------
    models : tuple of str
    score : ndarray (M,)
        Observed scores.
    coverage : {"simultaneous", "marginal"}
    alpha : float
    dominance : ndarray (M, M) of bool or None
        Simultaneous coverage: ``dominance[j, l]`` is "j certified better than l" (not yet
        closed transitively). None for marginal coverage.
    lower, upper : ndarray (M,) of int or None
        Marginal coverage: each model's rank bounds. None for simultaneous coverage (the bounds
        are counted from D).
    evidence : str
        The procedure in words ("Holm over one-sided paired t tests on 2788 item units; ...").
    procedure : dict
        The procedure in brief (the top-level keys of the JSON output).
    n_units : int
    excluded : dict
    pairwise : Pairwise or None
    details : dict

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[False, True], [False, False]])
    >>> c = Certification(models=("a", "b"), score=np.array([0.8, 0.2]), coverage="simultaneous",
    ...                   alpha=0.05, dominance=d, lower=None, upper=None, evidence="a test",
    ...                   procedure={}, n_units=20, excluded={})
    >>> c.ranking().upper.tolist()
    [1, 2]
    """

    models: tuple[str, ...]
    score: np.ndarray
    coverage: str
    alpha: float
    dominance: np.ndarray | None
    lower: np.ndarray | None
    upper: np.ndarray | None
    evidence: str
    procedure: dict
    n_units: int
    excluded: dict
    pairwise: Pairwise | None = None
    details: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.coverage not in COVERAGES:
            raise ValueError(f"coverage must be one of {COVERAGES}, got {self.coverage!r}")
        if (self.coverage == "simultaneous") != (self.dominance is not None):
            raise ValueError("simultaneous coverage certifies dominances; marginal gives bounds")

    def guarantee(self) -> str:
        """The guarantee in plain words."""
        if self.coverage == "simultaneous":
            return (
                f"With probability at least {1 - self.alpha:.0%}, every rank interval, certified "
                f"dominance and tier is true simultaneously ({self.evidence})."
            )
        return (
            f"For each model separately, its rank interval contains its true rank with "
            f"probability at least {1 - self.alpha:.0%}; the intervals are not simultaneous, so "
            f"they certify no joint statements ({self.evidence})."
        )

    def ranking(self, spec: MethodSpec | None = None) -> Ranking:
        """The :class:`~rankci.Ranking`: counting from D, or the marginal bounds as they are."""
        common = dict(
            alpha=self.alpha,
            procedure=dict(self.procedure),
            n_units=self.n_units,
            excluded=dict(self.excluded),
            guarantee=self.guarantee(),
            pairwise=self.pairwise,
            details=dict(self.details),
            spec=spec,
        )
        if self.dominance is not None:
            return ranking_from_dominance(
                self.models, self.score, self.dominance, coverage=self.coverage, **common
            )
        score = np.asarray(self.score, dtype=float)
        return Ranking(
            models=tuple(self.models),
            score=score,
            rank=observed_ranks(score),
            lower=np.asarray(self.lower),
            upper=np.asarray(self.upper),
            dominance=None,
            tier=None,
            coverage="marginal",
            **common,
        )
