"""Confidence sets for the tau-best models (Mogstad, Romano, Shaikh and Wilhelm 2024, Sec. 3.3).

The tau-best are the models whose true rank is at most tau (``1 + #{l : theta_l > theta_j} <=
tau``; with ties there can be more than tau of them). From any simultaneous rank intervals,

``B_tau = {j : L_j <= tau}``

contains all of them with probability at least 1 - alpha: when every certified dominance is true,
a model of true rank r has at most r - 1 models certified above it, so ``L_j <= r <= tau``. For
tau = 1 this is the confidence set for the best model. It only uses the lower rank bounds, i.e.
the dominances "l better than j" — which is csranks' ``cstaubest``, computed there from the same
simultaneous family of all ordered pairs. A model outside the set is certified not to be among
the tau best (``L_j > tau``: at least tau models are certified better).

References
----------
Mogstad, M., Romano, J. P., Shaikh, A. M. and Wilhelm, D. (2024). Inference for ranks with
applications to mobility across neighbourhoods and academic achievement across countries.
Review of Economic Studies 91(1), 476-518.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rankci._base import RankciWarning, check_positive_int, jsonable
from rankci.leaderboard import rank
from rankci.method import MethodSpec
from rankci.ranking import Ranking

__all__ = ["TauBest", "tau_best"]


@dataclass(frozen=True, repr=False, eq=False)
class TauBest:
    """A confidence set for the models whose true rank is at most tau.

    Attributes
    ----------
    tau : int
    members : tuple of str
        The models in the set, best observed score first.
    ranking : Ranking
        The simultaneous ranking the set was read from (``lower`` gives ``L_j``).
    guarantee : str
    note : str or None
        When the set is every model, why (what would be needed, and what changes it).
    """

    tau: int
    members: tuple[str, ...]
    ranking: Ranking
    guarantee: str
    note: str | None = None

    @property
    def spec(self) -> MethodSpec | None:
        """The method of the ranking the set was read from (``tau_best(data, spec=t.spec)``)."""
        return self.ranking.spec

    @property
    def in_set(self) -> np.ndarray:
        """Per model (in ``ranking.models`` order): is it in the set?"""
        return self.ranking.lower <= self.tau

    def to_frame(self) -> pd.DataFrame:
        """One row per model, best first: model, score, rank, rank_lower, in_set."""
        frame = self.ranking.to_frame()[["model", "score", "rank", "rank_lower"]]
        frame["in_set"] = self.in_set[self.ranking.order()]
        return frame.reset_index(drop=True)

    def to_dict(self) -> dict:
        out = {
            "tau": self.tau,
            "members": list(self.members),
            "alpha": self.ranking.alpha,
            "coverage": self.ranking.coverage,
            **{key: jsonable(value) for key, value in self.ranking.procedure.items()},
            "n_units": int(self.ranking.n_units),
            "excluded": jsonable(self.ranking.excluded),
            "models": [
                {k: jsonable(v) for k, v in row.items()}
                for row in self.to_frame().to_dict(orient="records")
            ],
            "guarantee": self.guarantee,
        }
        if self.note is not None:
            out["note"] = self.note
        if self.ranking.spec is not None:
            out["spec"] = self.ranking.spec.to_dict()
        return out

    def __repr__(self) -> str:
        shown = ", ".join(self.members[:8]) + (", ..." if len(self.members) > 8 else "")
        return (
            f"TauBest(tau={self.tau}, {len(self.members)} of {self.ranking.n_models} models, "
            f"alpha={self.ranking.alpha:g}: {shown})"
        )


def tau_best(
    ranking_or_data, tau: int = 1, *, spec: MethodSpec | None = None, **rank_options
) -> TauBest:
    """The confidence set for the tau-best models: ``{j : L_j <= tau}`` from simultaneous intervals.

    Parameters
    ----------
    ranking_or_data : Ranking, or anything :func:`rankci.rank` accepts
        A Ranking with simultaneous (or anytime-valid) coverage; otherwise the data are ranked
        with ``rankci.rank(data, coverage="simultaneous", **rank_options)``.
    tau : int, default 1
        1 gives the confidence set for the best model.
    spec : MethodSpec, optional
        The method of the ranking at once (simultaneous coverage), for example ``other.spec``;
        then pass no other method keyword. ``tau`` is not part of it: the spec is the method.
    **rank_options
        For :func:`rankci.rank` (``multiplicity="max-t"``, ``unit``, ``alpha``, ``rng``, ...).

    Returns
    -------
    TauBest
        ``result.spec`` is the ranking's :class:`~rankci.method.MethodSpec`.

    References
    ----------
    Mogstad, M., Romano, J. P., Shaikh, A. M. and Wilhelm, D. (2024). Inference for ranks with
    applications to mobility across neighbourhoods and academic achievement across countries.
    Review of Economic Studies 91(1), 476-518.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci.certify.maxt import maxt_ranking_from_cov
    >>> ranking = maxt_ranking_from_cov([0.5, 0.8, 0.78], np.eye(3) * 1e-4, rng=0)
    >>> tau_best(ranking, 1).members
    ('m1', 'm2')
    """
    tau = check_positive_int(tau, "tau")
    if isinstance(ranking_or_data, Ranking):
        if rank_options or spec is not None:
            raise ValueError("rank options are only used when data (not a Ranking) are given")
        ranking = ranking_or_data
        warned = False
    elif spec is not None:
        if isinstance(spec, MethodSpec) and spec.coverage != "simultaneous":
            raise ValueError("tau-best sets need coverage='simultaneous'")
        ranking = rank(ranking_or_data, spec=spec, **rank_options)
        warned = True  # the certifier explained an empty certification itself
    else:
        if rank_options.get("coverage", "simultaneous") != "simultaneous":
            raise ValueError("tau-best sets need coverage='simultaneous'")
        ranking = rank(ranking_or_data, **{**rank_options, "coverage": "simultaneous"})
        warned = True
    if ranking.coverage not in ("simultaneous", "anytime"):
        raise ValueError(
            f"a tau-best set needs simultaneous rank intervals, but this ranking has "
            f"{ranking.coverage!r} coverage: marginal intervals cover each model's rank on its "
            "own, not every tau-best model at once"
        )
    if tau > ranking.n_models:
        raise ValueError(
            f"tau must be at most the number of models ({ranking.n_models}), got {tau}"
        )
    inside = ranking.lower <= tau
    order = ranking.order()
    members = tuple(ranking.models[j] for j in order if inside[j])
    who = (
        "the best model (all of them, if several are tied)"
        if tau == 1
        else (f"every model whose true rank is at most {tau} (ties share the better rank)")
    )
    source = ranking.guarantee
    if "(" in source and source.rstrip(".").endswith(")"):
        source = source[source.index("(") + 1 : source.rstrip(".").rindex(")")]
    guarantee = (
        f"With probability at least {1 - ranking.alpha:.0%}, the set contains {who}; a model "
        f"outside it has at least {tau} models certified better (from simultaneous rank "
        f"intervals: {source})."
    )
    note = None
    if len(members) == ranking.n_models > 1:
        note = _every_model(ranking, tau, warn=not warned)
    return TauBest(tau=tau, members=members, ranking=ranking, guarantee=guarantee, note=note)


def _every_model(ranking: Ranking, tau: int, *, warn: bool) -> str:
    """Why the tau-best set is every model: the certifier's explanation, or the missing ranks."""
    reason = ranking.details.get("nothing_certified")
    if reason is None:
        reason = (
            f"no model has {tau} models certified better; that needs more units or larger "
            f"differences, or a larger alpha (now alpha={ranking.alpha:g})"
        )
        warn = True
    note = f"the tau-best set is every model: {reason}"
    if warn:
        warnings.warn(note, RankciWarning, stacklevel=3)
    return note
