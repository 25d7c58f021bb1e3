"""Rank intervals from votes: the Bradley-Terry fit through the certify stage.

``rank_votes`` fits the strengths and their covariance (:mod:`rankci.votes.bradley_terry`), then
certifies dominances as for scores: max-t from the covariance
(:func:`rankci.certify.maxt.maxt_ranking_from_cov`) or Holm over the pairwise z tests of the
strength differences (:func:`rankci.certify.holm.reject`). The result is a
:class:`~rankci.Ranking` whose ``spec`` is a :class:`VotesSpec` (every choice: ties rule,
covariance, cluster column, seed).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankci._base import (
    RankciWarning,
    check_alpha,
    check_choice,
    check_nonnegative,
    check_positive_int,
    fresh_seed,
)
from rankci.ranking import Ranking
from rankci.votes.bradley_terry import COVARIANCES, TIES, BradleyTerryFit, fit_bradley_terry
from rankci.votes.table import Votes

__all__ = ["VotesSpec", "rank_votes", "VOTE_MULTIPLICITIES", "ranking_from_fit"]

#: The certifiers of a vote ranking.
VOTE_MULTIPLICITIES = ("max-t", "holm")


@dataclass(frozen=True)
class VotesSpec:
    """How a ranking is computed from votes (recorded on the Ranking, written under ``"spec"``).

    Parameters
    ----------
    ties : {"half", "davidson", "rao-kupper"}, default "half"
    position : bool, default False
    covariates : tuple of str
    covariance : {"auto", "model", "sandwich", "cluster", "bootstrap"}, default "auto"
        ``"auto"``: clustered by ``cluster`` when given, else sandwich.
    cluster : str or None
        ``"auto"`` resolves to ``"prompt"`` when the votes have that column, else ``"voter"``,
        else None; it is dropped (None) with ``covariance="model"`` or ``"sandwich"``.
    bootstrap_reps : int, default 200
    multiplicity : {"max-t", "holm"}, default "max-t"
    coverage : {"simultaneous", "marginal"}, default "simultaneous"
    alpha : float, default 0.05
    delta : float, default 0
        Indifference margin on the log-odds scale.
    draws : int, default 1000
        Gaussian draws of the max-t critical values.
    seed : int or None
    elo_anchor : str or None
        The model whose Elo display is ``elo_rating`` (None: the mean strength is).
    elo_rating : float, default 1000
    human : str or None
        A column of the votes with human verdicts on a subset of the battles (empty elsewhere):
        the votes' own outcomes are then a judge's, corrected by prediction-powered inference
        (:func:`rankci.votes.ppi.fit_ppi_bradley_terry`); ties as half a win, no position or
        covariates, the PPI sandwich covariance (``covariance`` resolves to ``"ppi"``).
    inclusion : str or None
        With ``human``: the column of each battle's known probability of being labelled
        (stratified labelling); None: uniform at random.
    lam : "auto" or float, default "auto"
        With ``human``: PPI++ power tuning, or a fixed lam in [0, 1] (0 human only, 1 PPI).

    Examples
    --------
    >>> VotesSpec(ties="davidson").to_dict()["ties"]
    'davidson'
    >>> VotesSpec(ties="draw")
    Traceback (most recent call last):
    ...
    ValueError: unknown ties 'draw'; choose one of 'half', 'davidson', 'rao-kupper'
    """

    ties: str = "half"
    position: bool = False
    covariates: tuple[str, ...] = ()
    covariance: str = "auto"
    cluster: str | None = "auto"
    bootstrap_reps: int = 200
    multiplicity: str = "max-t"
    coverage: str = "simultaneous"
    alpha: float = 0.05
    delta: float = 0.0
    draws: int = 1000
    seed: int | None = None
    elo_anchor: str | None = None
    elo_rating: float = 1000.0
    human: str | None = None
    inclusion: str | None = None
    lam: str | float = "auto"

    def __post_init__(self) -> None:
        check_choice("ties", self.ties, TIES)
        if self.human is None:
            check_choice("covariance", self.covariance, ("auto", *COVARIANCES))
            if self.inclusion is not None or self.lam != "auto":
                raise ValueError("inclusion= and lam= apply with human= (a PPI fit) only")
        else:
            self._check_ppi()
        check_choice("multiplicity", self.multiplicity, VOTE_MULTIPLICITIES)
        check_choice("coverage", self.coverage, ("simultaneous", "marginal"))
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        object.__setattr__(self, "delta", check_nonnegative(self.delta, "delta"))
        object.__setattr__(self, "draws", check_positive_int(self.draws, "draws", minimum=100))
        object.__setattr__(
            self, "bootstrap_reps", check_positive_int(self.bootstrap_reps, "bootstrap_reps", 2)
        )
        object.__setattr__(self, "covariates", tuple(str(c) for c in self.covariates))
        object.__setattr__(self, "position", bool(self.position))
        object.__setattr__(self, "elo_rating", float(self.elo_rating))
        if self.seed is not None and (isinstance(self.seed, bool) or int(self.seed) < 0):
            raise ValueError(f"seed must be None or an integer >= 0, got {self.seed!r}")

    def _check_ppi(self) -> None:
        if not isinstance(self.human, str):
            raise ValueError(f"human must be a column name, got {self.human!r}")
        if self.ties != "half" or self.position or self.covariates:
            raise ValueError(
                "human= (a PPI fit) supports ties='half' without position or covariates; "
                f"got ties={self.ties!r}, position={self.position}, covariates={self.covariates}"
            )
        if self.covariance not in ("auto", "ppi"):
            raise ValueError(
                f"human= (a PPI fit) uses the PPI sandwich covariance; covariance="
                f"{self.covariance!r} is not offered with it"
            )
        if self.cluster not in ("auto", None):
            raise ValueError(
                f"human= (a PPI fit) treats battles as independent; cluster={self.cluster!r} is "
                "not offered with it"
            )
        lam = self.lam
        if isinstance(lam, str):
            if lam != "auto":
                raise ValueError(f"lam must be 'auto' or a number in [0, 1], got {lam!r}")
        elif isinstance(lam, bool) or not 0.0 <= float(lam) <= 1.0:
            raise ValueError(f"lam must be 'auto' or a number in [0, 1], got {lam!r}")
        else:
            object.__setattr__(self, "lam", float(lam))

    @property
    def draws_random(self) -> bool:
        """Whether the method draws random numbers (max-t critical values, the bootstrap)."""
        return self.multiplicity == "max-t" or self.covariance == "bootstrap"

    def resolved(self, votes: Votes) -> VotesSpec:
        """The spec with ``cluster``, ``covariance`` and ``seed`` made explicit for these votes."""
        if self.human is not None:
            seed = self.seed if self.seed is not None or self.multiplicity != "max-t" else None
            if seed is None and self.multiplicity == "max-t":
                seed = fresh_seed()
            return dataclasses.replace(self, cluster=None, covariance="ppi", seed=seed)
        cluster = self.cluster
        if cluster == "auto":
            cluster = next((c for c in ("prompt", "voter") if c in votes.columns), None)
        covariance = self.covariance
        if covariance == "auto":
            covariance = "cluster" if cluster is not None else "sandwich"
        if covariance in ("model", "sandwich"):
            cluster = None  # the covariance uses no cluster: none is recorded
        seed = self.seed
        if seed is None and (self.multiplicity == "max-t" or covariance == "bootstrap"):
            seed = fresh_seed()
        return dataclasses.replace(self, cluster=cluster, covariance=covariance, seed=seed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe fields, with ``"flow": "votes"``; :meth:`from_dict` reads it back."""
        out = {"flow": "votes", **dataclasses.asdict(self)}
        out["covariates"] = list(self.covariates)
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> VotesSpec:
        """The spec a :meth:`to_dict` describes."""
        values = {k: v for k, v in values.items() if k != "flow"}
        values["covariates"] = tuple(values.get("covariates", ()))
        return cls(**values)


def _pairwise_z(fit: BradleyTerryFit, delta: float):
    """z and one-sided p of ``H_jl: s_j - s_l <= delta`` from the covariance."""
    from scipy.stats import norm

    s, cov = fit.strength, fit.cov
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    se = np.sqrt(np.clip(var, 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (s[:, None] - s[None, :] - delta) / se
    np.fill_diagonal(z, np.nan)
    return z, norm.sf(z)


def ranking_from_fit(fit: BradleyTerryFit, spec: VotesSpec, votes: Votes | None = None) -> Ranking:
    """Certify a fitted board as ``spec`` says (``spec`` resolved, with its seed)."""
    from rankci.certify.certification import Certification
    from rankci.certify.holm import reject, rejections_per_row
    from rankci.certify.maxt import maxt_ranking_from_cov

    m = len(fit.models)
    if spec.multiplicity == "max-t":
        with warnings.catch_warnings():  # its "units" words do not fit votes: warned below
            warnings.simplefilter("ignore", RankciWarning)
            base = maxt_ranking_from_cov(
                fit.strength,
                fit.cov,
                models=fit.models,
                alpha=spec.alpha,
                coverage=spec.coverage,
                delta=spec.delta,
                draws=spec.draws,
                rng=spec.seed,
            )
        evidence = (
            f"max-t step-down over the z statistics of the strength differences, critical values "
            f"from {spec.draws} Gaussian draws"
        )
        crit = base.details.get("critical_values")
    else:
        _, p = _pairwise_z(fit, spec.delta)
        if spec.coverage == "simultaneous":
            dominance, lower, upper = reject(p, spec.alpha, "holm"), None, None
        else:
            dominance = None
            lower = 1 + rejections_per_row(p.T, spec.alpha / 2, "holm")
            upper = m - rejections_per_row(p, spec.alpha / 2, "holm")
        evidence = "Holm over the one-sided z tests of the strength differences"
        base = Certification(
            models=fit.models,
            score=fit.strength,
            coverage=spec.coverage,
            alpha=spec.alpha,
            dominance=dominance,
            lower=lower,
            upper=upper,
            evidence="",
            procedure={},
            n_units=fit.n_votes,
            excluded={},
        ).ranking()
        crit = None
    cov_words = {
        "model": "the inverse-Fisher covariance",
        "sandwich": "the sandwich (robust) covariance",
        "cluster": (
            f"the sandwich covariance clustered by {fit.cluster} ({fit.n_clusters} clusters, CR1)"
        ),
        "bootstrap": (
            f"a {'cluster ' if fit.cluster else ''}bootstrap covariance "
            f"({fit.details.get('bootstrap_used')} re-fits)"
        ),
        "ppi": (
            f"the prediction-powered (PPI++) sandwich covariance, {fit.details.get('n_labelled')} "
            f"human-labelled battles, lam = {fit.details.get('lam', float('nan')):.3f}"
        ),
    }[fit.covariance]
    ties_words = {
        "half": "ties as half a win to each side",
        "davidson": "Davidson ties",
        "rao-kupper": "Rao-Kupper ties",
    }[fit.ties]
    what = (
        "a prediction-powered Bradley-Terry fit of"
        if fit.covariance == "ppi"
        else ("a Bradley-Terry fit of")
    )
    words = (
        f"{evidence}, from {what} {fit.n_votes} {'judge ' if fit.covariance == 'ppi' else ''}"
        f"votes ({ties_words}) with "
        f"{cov_words}; the level is asymptotic"
    )
    if fit.cluster:
        words += f"; inference extends to new {fit.cluster}s like these"
    if spec.coverage == "simultaneous":
        guarantee = (
            f"With probability at least {1 - spec.alpha:.0%}, every rank interval, certified "
            f"dominance and tier is true simultaneously ({words})."
        )
    else:
        guarantee = (
            f"For each model separately, its rank interval contains its true rank with "
            f"probability at least {1 - spec.alpha:.0%}; not jointly ({words})."
        )
    procedure = {
        "flow": "votes",
        "model": "bradley-terry",
        "ties": fit.ties,
        "covariance": fit.covariance,
        "cluster": fit.cluster,
        "multiplicity": spec.multiplicity,
        "delta": spec.delta,
    }
    details = {
        "n_votes": fit.n_votes,
        "n_clusters": fit.n_clusters,
        "loglik": fit.loglik,
        "coefficients": _coefficient_table(fit, spec.alpha),
        "tie_parameter": fit.tie_parameter,
        "rank_ub_note": (
            "rank_ub is LMArena's 'Rank (UB)': 1 + the number of models whose marginal 95% "
            "interval lies wholly above this model's; an overlap rule with no joint guarantee"
        ),
        **{k: v for k, v in fit.details.items()},
    }
    if crit is not None:
        details["critical_values"] = crit
    if not np.any(base.dominance if base.dominance is not None else base.lower > 1):
        details["nothing_certified"] = _nothing_certified(fit, spec)
        warnings.warn(details["nothing_certified"], RankciWarning, stacklevel=3)
    columns = {
        "rating": fit.ratings(spec.elo_anchor, spec.elo_rating),
        "se": fit.se,
        "rank_ub": fit.rank_ub(0.95),
    }
    return dataclasses.replace(
        base,
        procedure=procedure,
        n_units=fit.n_votes,
        excluded=dict(votes.excluded) if votes is not None else {},
        guarantee=guarantee,
        details=details,
        spec=spec,
        model_columns=columns,
    )


def _coefficient_table(fit: BradleyTerryFit, alpha: float) -> dict:
    """Position and covariate coefficients with marginal (1 - alpha) z intervals."""
    from scipy.stats import norm

    z = norm.ppf(1 - alpha / 2)
    return {
        name: {
            **c,
            "lower": c["estimate"] - z * c["se"],
            "upper": c["estimate"] + z * c["se"],
            "p_value": float(2 * norm.sf(abs(c["estimate"]) / c["se"])) if c["se"] > 0 else None,
        }
        for name, c in fit.coef.items()
    }


def _nothing_certified(fit: BradleyTerryFit, spec: VotesSpec) -> str:
    z, _ = _pairwise_z(fit, spec.delta)
    best = float(np.nanmax(z)) if np.isfinite(z).any() else float("nan")
    return (
        f"nothing certified: the largest z of a strength difference is {best:.2f}, below what "
        f"{spec.multiplicity} needs at alpha = {spec.alpha:g} over {len(fit.models)} models; "
        "more votes on the closest pairs would separate them (see votes_needed)"
    )


def rank_votes(
    votes: Votes,
    *,
    alpha: float = 0.05,
    multiplicity: str = "max-t",
    coverage: str = "simultaneous",
    delta: float = 0.0,
    ties: str = "half",
    position: bool = False,
    covariates: Sequence[str] = (),
    covariance: str = "auto",
    cluster: str | None = "auto",
    bootstrap_reps: int = 200,
    draws: int = 1000,
    seed: int | None = None,
    elo_anchor: str | None = None,
    elo_rating: float = 1000.0,
    human: str | None = None,
    inclusion: str | None = None,
    lam: str | float = "auto",
    spec: VotesSpec | None = None,
) -> Ranking:
    """Rank the models of a vote table with simultaneous rank intervals.

    The Bradley-Terry strengths ``s`` (centred log-odds) and their covariance ``Sigma`` are
    fitted (:func:`~rankci.votes.bradley_terry.fit_bradley_terry`); "j beats l" is certified when
    ``(s_j - s_l - delta) / sqrt(Sigma_jj + Sigma_ll - 2 Sigma_jl)`` exceeds the max-t step-down
    critical value (or passes Holm over the M(M-1) one-sided z tests). The certified set gives
    the rank intervals, top-k and tiers as for scores.

    Parameters
    ----------
    votes : Votes
    alpha, multiplicity, coverage, delta, ties, position, covariates, covariance, cluster,
    bootstrap_reps, draws, seed, elo_anchor, elo_rating
        See :class:`VotesSpec`.
    human, inclusion, lam
        Prediction-powered inference (:class:`VotesSpec`): the votes' outcomes are a judge's,
        ``human`` names the column of human verdicts on a subset. The PPI strengths are
        certified; ``details["ppi"]`` puts the judge-only, human-only and PPI fits side by
        side (strengths, standard errors, rank intervals through the same certification) with
        the effective number of human labels.
    spec : VotesSpec, optional
        Instead of the keywords (a ``Ranking.spec`` computes the same ranking again).

    Returns
    -------
    Ranking
        ``score`` the centred strengths; ``model_columns`` the Elo ``rating``, ``se`` and
        LMArena's ``rank_ub``; ``details["coefficients"]`` the position and covariate effects
        with intervals; ``spec`` the resolved :class:`VotesSpec`.

    References
    ----------
    Romano, J. P. and Wolf, M. (2005). Exact and approximate stepdown methods for multiple
    hypothesis testing. Journal of the American Statistical Association 100(469), 94-108.
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.
    Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
    preference. Proceedings of ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 3000); b = (a + rng.integers(1, 3, 3000)) % 3
    >>> s = np.array([1.0, 0.0, -1.0])
    >>> out = (rng.random(3000) > 1 / (1 + np.exp(s[b] - s[a]))).astype(int)
    >>> r = rank_votes(Votes.from_arrays(a, b, out, models=["x", "y", "z"]), seed=1)
    >>> r.lower.tolist(), r.upper.tolist()
    ([1, 2, 3], [1, 2, 3])
    """
    if spec is None:
        spec = VotesSpec(
            ties=ties,
            position=position,
            covariates=tuple(covariates),
            covariance=covariance,
            cluster=cluster,
            bootstrap_reps=bootstrap_reps,
            multiplicity=multiplicity,
            coverage=coverage,
            alpha=alpha,
            delta=delta,
            draws=draws,
            seed=seed,
            elo_anchor=elo_anchor,
            elo_rating=elo_rating,
            human=human,
            inclusion=inclusion,
            lam=lam,
        )
    spec = spec.resolved(votes)
    if spec.elo_anchor is not None and spec.elo_anchor not in votes.models:
        raise ValueError(f"elo_anchor {spec.elo_anchor!r} is not a model of the votes")
    if spec.human is not None:
        return _ppi_ranking(votes, spec)
    return ranking_from_fit(fit_from_spec(votes, spec), spec, votes)


def _ppi_ranking(votes: Votes, spec: VotesSpec) -> Ranking:
    """The PPI board, with the judge-only and human-only boards certified the same way."""
    from rankci.votes.ppi import fit_ppi_bradley_terry

    ppi = fit_ppi_bradley_terry(votes, spec.human, inclusion=spec.inclusion, lam=spec.lam)
    ranking = ranking_from_fit(ppi.fit, spec, votes)
    summary = ppi.to_dict()
    intervals = {"ppi": (ranking.lower, ranking.upper)}
    with warnings.catch_warnings():  # the side fits' "nothing certified" is shown in the table
        warnings.simplefilter("ignore", RankciWarning)
        for name, fit in (("judge", ppi.judge_fit), ("human", ppi.human_fit)):
            if fit is not None:
                side = ranking_from_fit(fit, spec, votes)
                intervals[name] = (side.lower, side.upper)
    for row in summary["fits"]:
        k = votes.models.index(row["model"])
        for name in ("judge", "human", "ppi"):
            lo_hi = intervals.get(name)
            row[f"{name}_rank"] = None if lo_hi is None else [int(lo_hi[0][k]), int(lo_hi[1][k])]
    details = {**ranking.details, "ppi": summary}
    return dataclasses.replace(ranking, details=details)


def fit_from_spec(votes: Votes, spec: VotesSpec) -> BradleyTerryFit:
    """The Bradley-Terry fit a resolved ``spec`` describes (its bootstrap seeded by seed + 1)."""
    return fit_bradley_terry(
        votes,
        ties=spec.ties,
        position=spec.position,
        covariates=spec.covariates,
        covariance=spec.covariance,
        cluster=spec.cluster,
        bootstrap_reps=spec.bootstrap_reps,
        rng=None if spec.seed is None else spec.seed + 1,
    )
