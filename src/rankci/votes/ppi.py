"""Prediction-powered Bradley-Terry: a judge's votes on every battle, humans on a subset.

For battle i (models ``f < s`` of its pair, ``x_i = e_f - e_s``) with the judge's verdict
``yf_i`` and, where labelled (``R_i = 1``), the human verdict ``yh_i`` (1: f wins, 0: s wins,
1/2: tie), the per-battle loss is ``l(theta; y) = -y log sig(d) - (1 - y) log sig(-d)``,
``d = x_i' theta``. The PPI++ estimate (Angelopoulos, Duchi and Zrnic 2023; Boyeau et al. 2024)
minimises the rectified loss

    L(theta) = lam (1/N) sum_all l(theta; yf) + sum_i wt_i [l(theta; yh) - lam l(theta; yf)],

``wt_i = (R_i / pi_i) / sum_k (R_k / pi_k)`` (uniform sampling: ``1/n`` on the labelled
battles; stratified: inclusion probabilities ``pi_i``, Hajek-normalised). Its Hessian does not
depend on the verdicts, so for ``lam`` in [0, 1] it is a weighted Bradley-Terry likelihood with
fractional pattern counts, solved by the same Newton (Fisher scoring) as
:func:`~rankci.votes.bradley_terry.fit_bradley_terry`.

Covariance: ``H^-1 [(1/N^2) sum_i psi_i psi_i'] H^-1`` with the per-battle units
``psi_i = lam gf_i x_i + gbar + u_i (g_i x_i - gbar)``, ``g = gh - lam gf`` (the per-battle
gradients ``(p - y)``), ``u_i = N wt_i`` and ``gbar = (1/N) sum u_i g_i x_i``. Because the
judge's sum runs over *all* N battles (the labelled ones included), this is
``H^-1 [(2 lam C - lam^2 V)/N + Var(gh - lam gf)/n] H^-1`` (C, V the covariances of the
gradients), the M-estimation form of ``rankci.analyses.ppi``'s variance; it differs from
PPI++'s ``lam^2 V / N + Var(g)/n`` (disjoint samples) by the cross term. ``lam="auto"``: the
trace-optimal ``lam = tr(H^-1 (C + C') H^-1) / (2 tr(H^-1 V H^-1))`` over the centred
strengths, evaluated at the ``lam = 1`` fit, clipped to [0, 1].

References
----------
Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient prediction-powered
inference. arXiv:2311.01453.
Boyeau, P., Angelopoulos, A. N., Yosef, N., Malik, J. and Jordan, M. I. (2024). AutoEval done
right: using synthetic data for model evaluation. arXiv:2403.07008.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from rankci._base import RankciWarning
from rankci.votes.bradley_terry import (
    BradleyTerryFit,
    centring_matrix,
    fit_bradley_terry,
    newton_scoring,
    pattern_gram,
    vote_design,
)
from rankci.votes.table import A_WINS, B_WINS, TIE, Votes

__all__ = ["MIN_LABELS", "MIN_GAIN", "PPIVotesFit", "fit_ppi_bradley_terry"]

#: Below this many human-labelled battles for a model the asymptotics are fragile (the
#: threshold of the score side, rankci.analyses.ppi.MIN_LABELS).
MIN_LABELS = 50
#: PPI "gains nothing" when the effective labels are below MIN_GAIN x the labels.
MIN_GAIN = 1.1


@dataclass(frozen=True, eq=False)
class PPIVotesFit:
    """Three fits side by side: judge only, human only, PPI (all Bradley-Terry, centred).

    ``effective_labels``: ``n x tr Cov(human only) / tr Cov(PPI)``, the human labels PPI is
    worth (NaN when the human-only fit is not possible).
    """

    ppi: BradleyTerryFit
    judge: BradleyTerryFit
    human: BradleyTerryFit | None
    lam: float
    lam_rule: str
    n_votes: int
    n_labelled: int
    n_labelled_per_model: np.ndarray
    sampling: str
    agreement: float
    effective_labels: float
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def ranking(self, alpha: float = 0.05, multiplicity: str = "max-t", seed: int | None = None):
        """Rank intervals of the PPI strengths through max-t / Holm (``ranking_from_fit``); the
        PPI settings and the three fits are in ``details["ppi"]``."""
        import dataclasses

        from rankci.votes.rank import VotesSpec, ranking_from_fit

        spec = VotesSpec(alpha=alpha, multiplicity=multiplicity, covariance="sandwich", seed=seed)
        spec = dataclasses.replace(spec, cluster=None, seed=0 if seed is None else seed)
        base = ranking_from_fit(self.ppi, spec)
        human_se = None if self.human is None else self.human.se.tolist()
        ppi = {
            "lam": self.lam,
            "lam_rule": self.lam_rule,
            "sampling": self.sampling,
            "n_labelled": self.n_labelled,
            "n_labelled_per_model": self.n_labelled_per_model.tolist(),
            "agreement": self.agreement,
            "effective_labels": self.effective_labels,
            "judge_strength": self.judge.strength.tolist(),
            "judge_se": self.judge.se.tolist(),
            "human_strength": None if self.human is None else self.human.strength.tolist(),
            "human_se": human_se,
            "warnings": list(self.warnings),
        }
        guarantee = base.guarantee.replace(
            f"from a Bradley-Terry fit of {self.n_votes} votes",
            f"from a prediction-powered (PPI++, lam = {self.lam:.3f} {self.lam_rule}) "
            f"Bradley-Terry fit of {self.n_votes} judge votes and {self.n_labelled} "
            "human-labelled battles",
        )
        return dataclasses.replace(base, guarantee=guarantee, details={**base.details, "ppi": ppi})


def _side_y(outcome: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """1 / 0 / 0.5: the first (lower-code) model's result."""
    y_a = np.where(outcome == A_WINS, 1.0, np.where(outcome == B_WINS, 0.0, 0.5))
    return np.where(flip, 1.0 - y_a, y_a)


def _solve(des, m, yf, yh, u, lam, theta0):
    n_all = yf.size
    c = lam + (1.0 - lam) * u
    t = lam * yf + u * (yh - lam * yf)
    cp = np.bincount(des.pattern, c, des.first.size)
    tp = np.bincount(des.pattern, t, des.first.size)
    counts = np.stack([tp, cp - tp, np.zeros_like(cp)], 1)
    theta, _, it, ok = newton_scoring(des, counts, "half", theta0.copy())
    if not ok or not np.isfinite(theta).all() or np.abs(theta[:m]).max() > 25:
        raise ValueError(
            f"the prediction-powered fit (lam = {lam:g}) did not converge to finite strengths"
        )
    d = theta[des.first] - theta[des.second]
    p = 1.0 / (1.0 + np.exp(-d))
    info = pattern_gram(des, cp * p * (1 - p), None, None, False)
    return theta, p[des.pattern], info, it, n_all


def _xgram(des, m, weights) -> np.ndarray:
    """sum_i weights_i x_i x_i' per battle (M x M)."""
    return pattern_gram(des, np.bincount(des.pattern, weights, des.first.size), None, None, False)


def _xvec(des, m, weights) -> np.ndarray:
    f, s = des.first[des.pattern], des.second[des.pattern]
    return np.bincount(f, weights, m) - np.bincount(s, weights, m)


def fit_ppi_bradley_terry(
    votes: Votes,
    human,
    *,
    inclusion=None,
    lam: float | str = "auto",
) -> PPIVotesFit:
    """The PPI++ Bradley-Terry fit (module docstring): judge verdicts ``votes.outcome`` on
    every battle, human verdicts ``human`` (outcome codes, -1 where unlabelled).

    Parameters
    ----------
    votes : Votes
        The judge's votes (ties counted half).
    human : array_like of int or str
        Human outcome codes per vote (0 a wins, 1 b wins, 2 / 3 tie, -1 unlabelled), or the
        name of a column of ``votes`` holding them.
    inclusion : array_like of float or str, optional
        Inclusion probability of each battle in the labelled subset (stratified sampling).
    lam : float in [0, 1] or "auto"

    Returns
    -------
    PPIVotesFit

    Examples
    --------
    A judge that flips 20 % of the human verdicts; 300 of 3000 battles labelled:

    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 3000); b = (a + rng.integers(1, 3, 3000)) % 3
    >>> s = np.array([1.0, 0.0, -1.0])
    >>> human = (rng.random(3000) > 1 / (1 + np.exp(s[b] - s[a]))).astype(int)
    >>> judge = np.where(rng.random(3000) < 0.2, 1 - human, human)
    >>> h = np.where(np.arange(3000) < 300, human, -1)
    >>> fit = fit_ppi_bradley_terry(Votes.from_arrays(a, b, judge, models=["x", "y", "z"]), h)
    >>> bool(fit.effective_labels > fit.n_labelled), fit.lam_rule
    (True, 'auto')
    """
    if isinstance(human, str):
        if human not in votes.columns:
            raise ValueError(f"human={human!r} is not a column of the votes")
        human = votes.columns[human]
    h = np.asarray(human)
    if h.shape != (votes.n_votes,):
        raise ValueError(f"human has {h.size} entries for {votes.n_votes} votes")
    h = h.astype(np.int64)
    bad = np.flatnonzero((h < -1) | (h > 3))
    if bad.size:
        raise ValueError(
            f"human[{bad[0]}] = {h[bad[0]]}: a human verdict is an outcome code 0 (model_a), "
            "1 (model_b), 2 / 3 (tie) or -1 (unlabelled)"
        )
    labelled = h >= 0
    n_lab = int(labelled.sum())
    if n_lab == 0:
        raise ValueError("human: no battle is human-labelled; PPI needs a labelled subset")
    m = votes.n_models
    per_model = np.bincount(votes.a[labelled], minlength=m) + np.bincount(
        votes.b[labelled], minlength=m
    )
    if (per_model == 0).any():
        names = ", ".join(repr(votes.models[k]) for k in np.flatnonzero(per_model == 0)[:6])
        raise ValueError(
            f"human: model(s) {names} have no human-labelled battle; the correction of their "
            "strength has nothing to learn from"
        )
    if inclusion is None:
        sampling = "uniform"
        w = labelled.astype(float)
    else:
        if isinstance(inclusion, str):
            inclusion = votes.columns[inclusion]
        pi = np.asarray(inclusion, dtype=float)
        bad = np.flatnonzero(labelled & ~((pi > 0) & (pi <= 1)))
        if bad.size:
            raise ValueError(
                f"inclusion[{bad[0]}] = {pi[bad[0]]}: an inclusion probability is in (0, 1]"
            )
        sampling = "stratified"
        w = np.where(labelled, 1.0 / np.where(labelled, pi, 1.0), 0.0)
    n_all = votes.n_votes
    u = n_all * w / w.sum()
    des = vote_design(votes, False, ())
    flip = votes.a > votes.b
    yf = _side_y(votes.outcome, flip)
    yh = np.where(labelled, _side_y(np.maximum(h, 0), flip), 0.0)
    free = np.arange(1, m)
    jac = centring_matrix(m, 0, False)
    theta0 = np.zeros(m)
    if lam == "auto":
        theta1, p, info, _, _ = _solve(des, m, yf, yh, u, 1.0, theta0)
        gf, gh = p - yf, p - yh
        wt = u / n_all
        mf = _xvec(des, m, wt * gf)
        mh = _xvec(des, m, wt * gh)
        cross = _xgram(des, m, wt * gf * gh) - np.outer(mh, mf)
        var_f = _xgram(des, m, gf * gf / n_all) - np.outer(*(2 * [_xvec(des, m, gf / n_all)]))
        bread = jac @ np.linalg.inv(info[np.ix_(free, free)] / n_all)
        num = np.trace(bread @ (cross + cross.T)[np.ix_(free, free)] @ bread.T)
        den = 2 * np.trace(bread @ var_f[np.ix_(free, free)] @ bread.T)
        lam_value = float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0
        lam_rule = "auto"
        theta0 = theta1
    else:
        lam_value = float(lam)
        if not 0.0 <= lam_value <= 1.0:
            raise ValueError(f"lam = {lam!r}: a fixed lam is in [0, 1] (or 'auto')")
        lam_rule = "fixed"
    theta, p, info, it, _ = _solve(des, m, yf, yh, u, lam_value, theta0)
    gf, gh = p - yf, p - yh
    g = gh - lam_value * gf
    gbar = _xvec(des, m, u * g) / n_all
    a = lam_value * gf + u * g  # psi_i = a_i x_i + (1 - u_i) gbar
    r = 1.0 - u
    ax = _xvec(des, m, a * r)
    meat = _xgram(des, m, a * a) + np.outer(ax, gbar) + np.outer(gbar, ax)
    meat += (r @ r) * np.outer(gbar, gbar)
    bread = np.linalg.inv(info[np.ix_(free, free)])
    cov = jac @ bread @ meat[np.ix_(free, free)] @ bread @ jac.T
    strength = jac @ theta[free]
    ppi = BradleyTerryFit(
        models=votes.models,
        strength=strength,
        cov=cov,
        cov_model=cov,
        coef={},
        tie_parameter=None,
        ties="half",
        covariance="sandwich",
        cluster=None,
        n_clusters=None,
        n_votes=n_all,
        loglik=float("nan"),
        iterations=it,
        params=strength,
        params_cov=cov,
        details={"ppi": {"lam": lam_value, "lam_rule": lam_rule, "n_labelled": n_lab}},
    )
    said: list[str] = []
    judge = fit_bradley_terry(votes, covariance="sandwich")
    keep = np.flatnonzero(labelled)
    human_votes = Votes.from_arrays(votes.a[keep], votes.b[keep], h[keep], models=votes.models)
    try:
        human_fit = fit_bradley_terry(human_votes, covariance="sandwich")
    except ValueError as err:
        human_fit = None
        said.append(f"the human-only fit is not possible: {err}")
    eff = float("nan")
    if human_fit is not None:
        eff = n_lab * float(np.trace(human_fit.cov) / np.trace(cov))
        if eff < MIN_GAIN * n_lab:
            said.append(
                f"the judge agrees with the humans on {np.mean(votes.outcome[keep] == h[keep]):.0%}"
                f" of the labelled battles: PPI (lam = {lam_value:.2f}) is worth {eff:.0f} "
                f"labels for {n_lab}, less than x{MIN_GAIN}; it gains (almost) nothing over the "
                "human-only fit"
            )
    few = np.flatnonzero(per_model < MIN_LABELS)
    if few.size:
        said.append(
            f"{few.size} model(s) have fewer than {MIN_LABELS} human-labelled battles (for "
            f"example {votes.models[few[0]]!r}: {per_model[few[0]]}); the PPI asymptotics are "
            "fragile there"
        )
    for text in said:
        warnings.warn(text, RankciWarning, stacklevel=2)
    agreement = float(np.mean(np.minimum(votes.outcome[keep], TIE) == np.minimum(h[keep], TIE)))
    return PPIVotesFit(
        ppi,
        judge,
        human_fit,
        lam_value,
        lam_rule,
        n_all,
        n_lab,
        per_model,
        sampling,
        agreement,
        eff,
        tuple(said),
    )
