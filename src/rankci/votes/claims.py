"""Claims on votes: ``rankci check`` decides "A > B", "A in top 3", "A is best" from a BT fit.

The claims are those of :mod:`rankci.analyses.claims` and are decided by the same machinery
(one Holm family per call, rank claims read from the ordered pairs). Only the evidence differs:
each hypothesis ``H(j, l, c): s_j - s_l <= c`` on the Bradley-Terry strengths (natural log-odds;
margins ``c`` are on that scale) is tested by the one-sided z test

    z_jl = (s_j - s_l - c) / sqrt(Sigma_jj + Sigma_ll - 2 Sigma_jl),   p_jl = 1 - Phi(z_jl),

with ``Sigma`` the covariance of the fit that :func:`rankci.votes.rank_votes` uses (clustered by
prompt or voter when the votes have that column, else the sandwich). :class:`VoteEvidence` is
what :func:`rankci.analyses.claims.decide_claims` reads in place of a units x models matrix.

References
----------
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal of
Statistics 6(2), 65-70.
Bradley, R. A. and Terry, M. E. (1952). Rank analysis of incomplete block designs: I. The method
of paired comparisons. Biometrika 39(3/4), 324-345.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rankci.evidence.pairwise import Pairwise
from rankci.votes.bradley_terry import BradleyTerryFit
from rankci.votes.rank import VotesSpec, fit_from_spec
from rankci.votes.table import Votes

__all__ = ["VoteEvidence", "check_vote_claims"]


@dataclass(frozen=True)
class VoteEvidence:
    """A fitted board as the claims machinery reads it: models, scores and z tests.

    ``unit`` is ``"vote"``, ``n_units`` the votes fitted; :meth:`margin_tests` gives the
    one-sided z tests of ``s_j - s_l <= margin`` for every ordered pair as a
    :class:`~rankci.evidence.pairwise.Pairwise`.
    """

    fit: BradleyTerryFit
    excluded: dict = field(default_factory=dict)
    unit: str = "vote"
    missing: str = "complete"
    scope: str = "new votes like these"

    @property
    def models(self) -> list[str]:
        return list(self.fit.models)

    @property
    def n_units(self) -> int:
        return int(self.fit.n_votes)

    @property
    def tests_words(self) -> str:
        """The family's tests, in the guarantee's words."""
        how = {
            "model": "the inverse-Fisher covariance",
            "sandwich": "the sandwich covariance",
            "cluster": f"the sandwich covariance clustered by {self.fit.cluster}",
            "bootstrap": "a bootstrap covariance",
        }[self.fit.covariance]
        return (
            f"z tests of Bradley-Terry strength differences (log-odds, {self.fit.ties} ties, "
            f"{how}; asymptotic)"
        )

    def model_scores(self) -> np.ndarray:
        """The centred strengths (the ranking's scores)."""
        return np.asarray(self.fit.strength, dtype=float)

    def margin_tests(self, margin: float = 0.0) -> Pairwise:
        """One-sided z tests of ``H_jl: s_j - s_l <= margin`` for every ordered pair.

        Examples
        --------
        >>> from rankci.votes import fit_bradley_terry
        >>> rng = np.random.default_rng(0)
        >>> a = rng.integers(0, 3, 3000); b = (a + rng.integers(1, 3, 3000)) % 3
        >>> s = np.array([1.0, 0.0, -1.0])
        >>> out = (rng.random(3000) > 1 / (1 + np.exp(s[b] - s[a]))).astype(int)
        >>> fit = fit_bradley_terry(Votes.from_arrays(a, b, out, models=["x", "y", "z"]))
        >>> pw = VoteEvidence(fit).margin_tests()
        >>> bool(pw.pvalue[0, 2] < 1e-10), bool(pw.pvalue[2, 0] > 0.99)
        (True, True)
        """
        from scipy.stats import norm

        s, cov = self.fit.strength, self.fit.cov
        d = np.diag(cov)
        se = np.sqrt(np.clip(d[:, None] + d[None, :] - 2 * cov, 0, None))
        estimate = s[:, None] - s[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (estimate - margin) / se
        np.fill_diagonal(z, np.nan)
        p = norm.sf(z)
        m = len(s)
        return Pairwise(
            models=tuple(self.fit.models),
            test="z",
            delta=float(margin),
            estimate=estimate,
            statistic=z,
            pvalue=p,
            n=np.full((m, m), self.n_units, dtype=int),
            se=se,
            df=None,
            unit=self.unit,
            missing=self.missing,
            options={"test_rule": "z", "covariance": self.fit.covariance},
            excluded=dict(self.excluded),
            score=self.model_scores(),
            n_units=self.n_units,
        )


def check_vote_claims(
    votes: Votes,
    claims: Sequence[str],
    *,
    alpha: float = 0.05,
    spec: VotesSpec | None = None,
):
    """Decide claims about the models of a vote table, all at once at level ``alpha``.

    Every hypothesis ``s_j - s_l <= c`` of the claims (and, with a rank claim, all M(M - 1)
    ordered pairs) is tested by the z test of the module docstring; Holm over the call's family
    makes every supported claim true and every contradicted claim false, jointly, with
    probability >= 1 - alpha (asymptotically). Margins are on the log-odds scale.

    Parameters
    ----------
    votes : Votes
    claims : sequence of str
        In the grammar of :mod:`rankci.analyses.claims` (docs/check.md).
    alpha : float, default 0.05
    spec : VotesSpec, optional
        The fit (ties, position, covariates, covariance, cluster); its ``alpha`` is replaced by
        ``alpha`` and its multiplicity is Holm.

    Returns
    -------
    ClaimCheck
        ``unit`` is ``"vote"``; ``spec`` the resolved :class:`~rankci.votes.VotesSpec`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 3000); b = (a + rng.integers(1, 3, 3000)) % 3
    >>> s = np.array([1.0, 0.0, -1.0])
    >>> out = (rng.random(3000) > 1 / (1 + np.exp(s[b] - s[a]))).astype(int)
    >>> votes = Votes.from_arrays(a, b, out, models=["x", "y", "z"])
    >>> check = check_vote_claims(votes, ["x is best", "z > y"])
    >>> [r.result for r in check.results]
    ['supported', 'contradicted']
    """
    from rankci.analyses.claims import ClaimGroup, claims_spec, decide_claims, parse_claim

    parsed = tuple(parse_claim(c) if isinstance(c, str) else c for c in claims)
    if not parsed:
        raise ValueError("no claim given: pass at least one claim")
    spec = dataclasses.replace(spec or VotesSpec(), alpha=alpha, multiplicity="holm")
    spec = spec.resolved(votes)
    evidence = VoteEvidence(fit_from_spec(votes, spec), dict(votes.excluded))
    check = decide_claims(
        [ClaimGroup(evidence, parsed)], spec=claims_spec(None, {"alpha": alpha, "test": "z"}, "")
    )
    return dataclasses.replace(check, spec=spec)
