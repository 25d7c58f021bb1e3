"""Judge votes corrected by human votes: prediction-powered Bradley-Terry (PPI++ for arenas).

An LLM judge gives a verdict on every one of N battles; humans give one on a subset (battle i
labelled, ``R_i = 1``, with known inclusion probability ``pi_i``). The judge alone is biased
(it may favour some models), the humans alone are few. Prediction-powered inference for an
M-estimator (Angelopoulos, Duchi and Zrnic 2023; for arenas Boyeau et al. 2024) minimises the
*rectified* loss

    L_lam(theta) = lam (1/N) sum_all l(theta; judge_i)
                   + (1/N) sum_labelled w_i [l(theta; human_i) - lam l(theta; judge_i)],

with ``l`` the Bradley-Terry negative log-likelihood of one vote (ties as half a win to each
side), ``w_i = R_i / pi_i`` scaled so that ``sum_i w_i = N`` (Hajek; uniform labelling gives
``w_i = N / n``, so the second sum is ``(1/n) sum_labelled [...]`` as in PPI++). The loss is a
Bradley-Terry log-likelihood with signed pattern counts ``lam n^judge + sum w (n^human -
lam n^judge)``; its Hessian does not depend on the verdicts, so it is ``lam H_all + (1 - lam)
H_labelled`` and positive definite for ``lam`` in [0, 1]: the same Newton steps as
:func:`~rankci.votes.bradley_terry.fit_bradley_terry` solve it.

Covariance: the sandwich of the per-battle influence ``psi_i = lam g^f_i + w_i (Delta_i -
Delta_bar)``, ``g = grad l``, ``Delta = g^h - lam g^f`` (``Delta_bar`` its weighted mean over
the labelled battles, the Hajek linearisation),

    Cov(theta) = H^-1 [ (1/N^2) sum_i (psi_i - psi_bar)(psi_i - psi_bar)' ] H^-1,

which for uniform labelling is ``H^-1 [ (lam^2/N) Var(g^f) + (2 lam/N) Cov(g^f, Delta) +
(1/n) Var(Delta) ] H^-1``: PPI++'s ``(lam^2/N) Var(g^f) + (1/n) Var(g^h - lam g^f)`` for a
labelled set drawn *from* the N battles (not beside them), the same all-battles form as the
score-side :mod:`rankci.analyses.ppi`. The labelled battles enter with weights ``1/pi_i``:
stratified labelling with known probabilities is unbiased (Horvitz-Thompson, Hajek-normalised).

``lam="auto"`` is PPI++'s power tuning: with ``psi_i = a_i + lam b_i`` (evaluated at the
``lam = 1`` fit), the trace of the centred-strength covariance is a quadratic in lam, smallest
at ``lam* = -tr(A S_ab A') / tr(A S_bb A')`` (``A = J H^-1``, ``S`` the cross-products of the
centred a, b), clipped to [0, 1]; the fit is then redone at ``lam*``. ``lam = 0`` is the
human-only fit (the Bradley-Terry fit of the labelled votes, with its HC0 sandwich), ``lam = 1``
the classic PPI.

The strengths are centred (``sum_j s_j = 0``) as in the plain fit; the covariance is that of
the centred strengths. The level is asymptotic in the labelled count (PPI++ is); below
:data:`MIN_LABELS` labelled battles for a model a warning says so.

References
----------
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. and Zrnic, T. (2023).
Prediction-powered inference. Science 382(6671), 669-674.
Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient prediction-powered
inference. arXiv:2311.01453.
Boyeau, P., Angelopoulos, A. N., Yosef, N., Malik, J. and Jordan, M. I. (2024). AutoEval done
right: using synthetic data for model evaluation. arXiv:2403.07008.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rankci._base import RankciWarning
from rankci.votes.bradley_terry import (
    DIVERGED,
    BradleyTerryFit,
    SeparationError,
    centring_matrix,
    check_fittable,
    fit_bradley_terry,
    newton_scoring,
    pattern_gram,
    pattern_predictor,
    pattern_vector,
    vote_design,
)
from rankci.votes.table import A_WINS, OUTCOMES, TIE, Votes

__all__ = [
    "MIN_LABELS",
    "MIN_GAIN",
    "PPIBradleyTerry",
    "PPIVotesFit",
    "fit_ppi_bradley_terry",
    "human_codes",
]

#: Fewer labelled battles than this for a model: the asymptotics (and the tuned lam) are shaky.
MIN_LABELS = 50
#: PPI "gains nothing" when its effective labels are below this factor times the labels.
MIN_GAIN = 1.1


@dataclass(frozen=True, eq=False)
class PPIBradleyTerry:
    """Three Bradley-Terry fits of one arena: judge only, human only and PPI.

    Attributes
    ----------
    fit : BradleyTerryFit
        The PPI fit (``covariance="ppi"``); what :func:`~rankci.votes.rank_votes` certifies.
    judge_fit : BradleyTerryFit
        The judge's verdicts on all battles (sandwich covariance): biased if the judge is.
    human_fit : BradleyTerryFit or None
        The human verdicts on the labelled battles (``lam = 0``); None when they alone do not
        give finite strengths (``notes`` says why).
    lam : float
    lam_rule : str
        ``"auto"`` (PPI++ tuned, clipped to [0, 1]) or ``"fixed"``.
    lam_unclipped : float or None
        The tuned value before clipping.
    n_battles, n_labelled : int
    n_labelled_model : ndarray (M,)
        Labelled battles of each model.
    effective_labels : float
        ``n_labelled tr(Cov_human) / tr(Cov_ppi)``: the labels a human-only fit would need for
        the PPI precision.
    effective_labels_model : ndarray (M,)
        Per model, ``n_labelled_model Var_human(s_j) / Var_ppi(s_j)``.
    sampling : {"uniform", "stratified"}
    warnings : tuple of str
    """

    fit: BradleyTerryFit
    judge_fit: BradleyTerryFit
    human_fit: BradleyTerryFit | None
    lam: float
    lam_rule: str
    lam_unclipped: float | None
    n_battles: int
    n_labelled: int
    n_labelled_model: np.ndarray
    effective_labels: float
    effective_labels_model: np.ndarray
    sampling: str
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)

    @property
    def models(self) -> tuple[str, ...]:
        return self.fit.models

    # the names of the first version (branch a-ppi-votes), kept for its callers
    @property
    def ppi(self) -> BradleyTerryFit:
        """The PPI fit (``fit``)."""
        return self.fit

    @property
    def judge(self) -> BradleyTerryFit:
        """The judge-only fit (``judge_fit``)."""
        return self.judge_fit

    @property
    def human(self) -> BradleyTerryFit | None:
        """The human-only fit (``human_fit``)."""
        return self.human_fit

    @property
    def n_votes(self) -> int:
        return self.n_battles

    @property
    def n_labelled_per_model(self) -> np.ndarray:
        return self.n_labelled_model

    @property
    def agreement(self) -> float:
        """The share of labelled battles where judge and human agree (ties as one verdict)."""
        return float(self.details.get("agreement", float("nan")))

    @property
    def fits(self) -> pd.DataFrame:
        """The three fits side by side: strengths and standard errors, labels, effective labels."""
        nan = np.full(len(self.models), np.nan)
        human = self.human_fit
        return pd.DataFrame(
            {
                "model": list(self.models),
                "judge": self.judge_fit.strength,
                "judge_se": self.judge_fit.se,
                "human": human.strength if human is not None else nan,
                "human_se": human.se if human is not None else nan,
                "ppi": self.fit.strength,
                "ppi_se": self.fit.se,
                "n_labelled": self.n_labelled_model.astype(int),
                "effective_labels": self.effective_labels_model,
            }
        )

    def to_dict(self) -> dict:
        """JSON-safe summary (the fits as records)."""
        from rankci._base import jsonable

        return jsonable(
            {
                "lam": self.lam,
                "lam_rule": self.lam_rule,
                "lam_unclipped": self.lam_unclipped,
                "sampling": self.sampling,
                "n_battles": self.n_battles,
                "n_labelled": self.n_labelled,
                "effective_labels": self.effective_labels,
                "fits": self.fits.to_dict(orient="records"),
                "warnings": list(self.warnings),
                "notes": list(self.notes),
            }
        )


def human_codes(values: object, n_votes: int, name: str = "human") -> np.ndarray:
    """Human verdicts as outcome codes, -1 where the battle was not labelled.

    Accepted: the codes 0-3 or the names of :data:`~rankci.votes.table.OUTCOMES`
    (``"model_a"``, ``"model_b"``, ``"tie"``, ``"tie (bothbad)"``); unlabelled is NaN, None, an
    empty string or the code -1. Anything else is refused, naming the vote.

    Examples
    --------
    >>> human_codes(["model_a", "", "tie", None, 1, -1], 6).tolist()
    [0, -1, 2, -1, 1, -1]
    """
    arr = np.asarray(values, dtype=object).ravel()
    if arr.size != n_votes:
        raise ValueError(f"the human column {name!r} has {arr.size} values for {n_votes} votes")
    series = pd.Series(arr, dtype=object)
    text = series.map(lambda v: v.strip().lower() if isinstance(v, str) else v)
    missing = series.isna().to_numpy() | (text == "").to_numpy()
    by_name = text.map({o: float(k) for k, o in enumerate(OUTCOMES)})
    is_text = series.map(lambda v: isinstance(v, (str, bool))).to_numpy()
    numeric = pd.to_numeric(series.where(~is_text), errors="coerce").to_numpy(dtype=float)
    value = np.where(is_text, by_name.to_numpy(dtype=float), numeric)
    missing |= value == -1.0  # the code of "unlabelled"
    ok = missing | np.isin(value, (0.0, 1.0, 2.0, 3.0))
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            f"the human column {name!r}, vote {k}: {arr[k]!r} is not a verdict; allowed are "
            f"{', '.join(map(repr, OUTCOMES))} (or the codes 0-3), empty or -1 where unlabelled"
        )
    out = np.where(missing, -1, np.nan_to_num(value, nan=-1)).astype(np.int64)
    return out


def _inclusion(
    inclusion: object, votes: Votes, labelled: np.ndarray, name: str
) -> np.ndarray | None:
    if inclusion is None:
        return None
    if isinstance(inclusion, str):
        if inclusion not in votes.columns:
            raise ValueError(
                f"the inclusion column {inclusion!r} is not a column of the votes; columns are "
                f"{sorted(votes.columns)}"
            )
        inclusion = votes.columns[inclusion]
    pi = pd.to_numeric(
        pd.Series(np.asarray(inclusion, dtype=object).ravel()), errors="coerce"
    ).to_numpy(dtype=float)
    if pi.size != votes.n_votes:
        raise ValueError(
            f"the inclusion column {name!r} has {pi.size} values for {votes.n_votes} votes"
        )
    bad = labelled & ~((pi > 0) & (pi <= 1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"the inclusion column {name!r}, vote {k}: {pi[k]!r} is not a probability in (0, 1]; "
            "every labelled battle needs its known probability of being labelled"
        )
    return pi


def _klass(votes: Votes, outcome: np.ndarray) -> np.ndarray:
    """Outcome classes as :func:`vote_design` codes them (0 first wins, 1 second, 2 tie)."""
    flip = votes.a > votes.b
    return np.where(outcome >= TIE, 2, np.where((outcome == A_WINS) != flip, 0, 1)).astype(np.intp)


def _counts(des, klass: np.ndarray, weight: np.ndarray) -> np.ndarray:
    n_p = des.first.size
    return np.bincount(des.pattern * 3 + klass, weights=weight, minlength=3 * n_p).reshape(-1, 3)


class _Problem:
    """The rectified loss of one arena, for any lam: counts, per-vote gradients, sandwich."""

    def __init__(self, votes: Votes, human: np.ndarray, w: np.ndarray):
        self.des = vote_design(votes, False, ())
        self.m = votes.n_models
        self.n = votes.n_votes
        self.w = w
        self.labelled = w > 0
        self.kf = self.des.klass
        self.kh = np.where(self.labelled, _klass(votes, np.where(human >= 0, human, 0)), 0)
        self.cf = _counts(self.des, self.kf, np.ones(self.n))
        self.cfw = _counts(self.des, self.kf, w)
        self.chw = _counts(self.des, self.kh, w)
        self.free = np.arange(1, self.m)
        self.jac = centring_matrix(self.m, 0, False)

    def counts(self, lam: float) -> np.ndarray:
        return lam * self.cf + self.chw - lam * self.cfw

    def solve(self, lam: float):
        theta, _, _, ok = newton_scoring(self.des, self.counts(lam), "half", np.zeros(self.m))
        if not ok or not np.isfinite(theta).all() or np.abs(theta).max() > DIVERGED:
            return None
        return theta

    def pieces(self, theta: np.ndarray):
        """H (free x free, per battle), and the per-vote influence split psi = a + lam b."""
        d, _ = pattern_predictor(self.des, theta)
        p = 1.0 / (1.0 + np.exp(-d))
        y = np.array([1.0, 0.0, 0.5])
        pv = p[self.des.pattern]
        gf = y[self.kf] - pv  # log-likelihood scores on d, one per vote
        gh = np.where(self.labelled, y[self.kh] - pv, 0.0)
        return p, gf, gh

    def hessian(self, p: np.ndarray, lam: float) -> np.ndarray:
        n_p = self.counts(lam).sum(axis=1)
        z = np.zeros_like(p)
        full = pattern_gram(self.des, n_p * p * (1 - p), z, z, False) / self.n
        return full[np.ix_(self.free, self.free)]

    def _vec(self, per_vote: np.ndarray) -> np.ndarray:
        """sum_i per_vote_i x_i (x_i = e_first - e_second), free coordinates."""
        by_pattern = np.bincount(self.des.pattern, per_vote, self.des.first.size)
        return pattern_vector(self.des, by_pattern, None, False)[self.free]

    def _gram(self, per_vote: np.ndarray) -> np.ndarray:
        by_pattern = np.bincount(self.des.pattern, per_vote, self.des.first.size)
        z = np.zeros_like(by_pattern)
        return pattern_gram(self.des, by_pattern, z, z, False)[np.ix_(self.free, self.free)]

    def meat(self, gf: np.ndarray, gh: np.ndarray, lam: float) -> np.ndarray:
        """(1/N^2) sum_i (psi_i - psi_bar)(psi_i - psi_bar)', psi_i = c_i x_i - w_i Delta_bar."""
        w, n = self.w, self.n
        delta = gh - lam * gf
        c = lam * gf + w * delta
        dbar = self._vec(w * delta) / n
        u = self._vec(c * w)
        outer = self._gram(c**2) - np.outer(u, dbar) - np.outer(dbar, u)
        outer += (w**2).sum() * np.outer(dbar, dbar)
        psibar = (self._vec(c) - w.sum() * dbar) / n
        return (outer - n * np.outer(psibar, psibar)) / n**2

    def cross(self, gf: np.ndarray, gh: np.ndarray):
        """The lam-quadratic pieces of the meat: M(lam) = Saa + lam (Sab + Sba) + lam^2 Sbb."""
        m0 = self.meat(gf, gh, 0.0)
        m1 = self.meat(gf, gh, 1.0)
        mm = self.meat(gf, gh, -1.0)
        sbb = (m1 + mm) / 2 - m0
        sab2 = (m1 - mm) / 2  # Sab + Sba
        return m0, sab2, sbb

    def fit(self, theta: np.ndarray, lam: float):
        p, gf, gh = self.pieces(theta)
        bread = np.linalg.inv(self.hessian(p, lam))
        cov = self.jac @ bread @ self.meat(gf, gh, lam) @ bread.T @ self.jac.T
        return self.jac @ theta[self.free], cov


def _as_fit(votes: Votes, strength, cov, covariance: str, n_votes: int, details) -> BradleyTerryFit:
    return BradleyTerryFit(
        models=votes.models,
        strength=strength,
        cov=cov,
        cov_model=cov,
        coef={},
        tie_parameter=None,
        ties="half",
        covariance=covariance,
        cluster=None,
        n_clusters=None,
        n_votes=n_votes,
        loglik=float("nan"),
        iterations=0,
        params=strength,
        params_cov=cov,
        details=details,
    )


def fit_ppi_bradley_terry(
    votes: Votes,
    human: object,
    *,
    inclusion: object = None,
    lam: str | float = "auto",
) -> PPIBradleyTerry:
    """Prediction-powered Bradley-Terry strengths: judge verdicts on all battles, human on some.

    Minimises the rectified loss ``lam (1/N) sum_all l(theta; judge) + (1/N) sum_labelled w_i
    [l(theta; human) - lam l(theta; judge)]`` (``w_i = N/n`` under uniform labelling, so the
    second term is ``(1/n) sum_labelled [...]``; ``1/pi_i`` Hajek-normalised under stratified
    labelling) by Newton, with the sandwich covariance ``H^-1 [(1/N^2) sum_i (psi_i -
    psi_bar)(...)'] H^-1`` of the per-battle influence ``psi_i = lam g^f_i + w_i (g^h_i - lam
    g^f_i - Delta_bar)`` (module docstring). ``votes.outcome`` holds the judge's verdicts.

    Parameters
    ----------
    votes : Votes
        Every battle, ``outcome`` the judge's verdict.
    human : str or array_like
        A column of ``votes`` (or an array of length ``n_votes``) with the human verdict where
        the battle was labelled, empty elsewhere (:func:`human_codes`).
    inclusion : str, array_like or None
        Each battle's known probability of being labelled (stratified labelling); None: uniform
        at random, ``n / N``.
    lam : "auto" or float in [0, 1]
        ``"auto"``: PPI++'s trace-optimal power tuning, clipped to [0, 1]; ``0`` human only,
        ``1`` classic PPI.

    Returns
    -------
    PPIBradleyTerry
        ``fit`` (PPI), ``judge_fit``, ``human_fit``, ``lam``, effective labels and warnings
        (also issued as :class:`~rankci.RankciWarning`).

    Raises
    ------
    ValueError
        Human verdicts outside the allowed values, no labelled battle, a model with no labelled
        battle, a bad inclusion probability or lam.
    SeparationError
        The rectified loss has no finite minimum.

    References
    ----------
    Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient prediction-powered
    inference. arXiv:2311.01453.
    Boyeau, P., Angelopoulos, A. N., Yosef, N., Malik, J. and Jordan, M. I. (2024). AutoEval
    done right: using synthetic data for model evaluation. arXiv:2403.07008.

    Examples
    --------
    A judge that agrees with the human 70 % of the time and otherwise votes for model ``z``;
    humans label 400 of 4000 battles:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> n = 4000
    >>> a = rng.integers(0, 3, n); b = (a + rng.integers(1, 3, n)) % 3
    >>> s = np.array([0.5, 0.0, -0.5])
    >>> truth = np.where(rng.random(n) < 1 / (1 + np.exp(s[b] - s[a])), 0, 1)
    >>> judge = np.where(rng.random(n) < 0.7, truth, np.where(a == 2, 0, 1))
    >>> human = np.full(n, np.nan); human[:400] = truth[:400]
    >>> v = Votes.from_arrays(a, b, judge, models=["x", "y", "z"])
    >>> out = fit_ppi_bradley_terry(v, human)
    >>> out.fits.round(2)[["model", "judge", "human", "ppi", "effective_labels"]]
      model  judge  human   ppi  effective_labels
    0     x   0.14   0.37  0.47            408.93
    1     y  -0.20   0.08  0.02            458.97
    2     z   0.07  -0.45 -0.49            399.90
    >>> round(out.lam, 3), out.n_labelled, round(out.effective_labels)
    (0.619, 400, 630)
    """
    if votes.n_votes < 2:
        raise ValueError(f"votes: {votes.n_votes} vote(s); PPI needs battles to fit")
    name = human if isinstance(human, str) else "human"
    if isinstance(human, str):
        if human not in votes.columns:
            raise ValueError(
                f"the human column {human!r} is not a column of the votes; columns are "
                f"{sorted(votes.columns)}"
            )
        human = votes.columns[human]
    codes = human_codes(human, votes.n_votes, name)
    labelled = codes >= 0
    n_lab = int(labelled.sum())
    if n_lab == 0:
        raise ValueError(
            f"the human column {name!r} has no verdict: no battle is labelled, so nothing "
            "corrects the judge"
        )
    if n_lab < 2:
        raise ValueError(f"the human column {name!r} has one verdict; PPI needs labelled battles")
    per_model = np.bincount(votes.a[labelled], minlength=votes.n_models) + np.bincount(
        votes.b[labelled], minlength=votes.n_models
    )
    missing = np.flatnonzero(per_model == 0)
    if missing.size:
        shown = ", ".join(repr(votes.models[k]) for k in missing[:5])
        raise ValueError(
            f"model(s) {shown} have no labelled battle in the human column {name!r}: nothing "
            "corrects the judge's bias for them; label some of their battles"
        )
    if isinstance(lam, str):
        if lam != "auto":
            raise ValueError(f"lam must be 'auto' or a number in [0, 1], got {lam!r}")
    else:
        if isinstance(lam, bool) or not (0.0 <= float(lam) <= 1.0):
            raise ValueError(f"lam must be 'auto' or a number in [0, 1], got {lam!r}")
        lam = float(lam)
    inc_name = inclusion if isinstance(inclusion, str) else "inclusion"
    pi = _inclusion(inclusion, votes, labelled, inc_name)
    check_fittable(votes, "half")  # the judge's board: connected, not separated
    if pi is None:
        w = np.where(labelled, votes.n_votes / n_lab, 0.0)
    else:
        raw = np.where(labelled, 1.0 / np.where(labelled, pi, 1.0), 0.0)
        w = raw * votes.n_votes / raw.sum()
    prob = _Problem(votes, codes, w)
    notes: list[str] = []
    lam_unclipped = None
    if lam == "auto":
        theta1 = prob.solve(1.0)
        if theta1 is None:
            raise SeparationError("PPI (lam = 1): the rectified loss has no finite minimum")
        p, gf, gh = prob.pieces(theta1)
        a_mat = prob.jac @ np.linalg.inv(prob.hessian(p, 1.0))
        saa, sab2, sbb = prob.cross(gf, gh)
        denom = np.trace(a_mat @ sbb @ a_mat.T)
        scale = np.trace(a_mat @ saa @ a_mat.T)
        if denom <= 1e-9 * scale:  # every battle labelled: the variance does not depend on lam
            lam_unclipped = 1.0
            notes.append(
                "every battle has a human verdict: the covariance does not depend on lam; "
                "lam = 1 (the human verdicts decide)"
            )
        else:
            lam_unclipped = float(-np.trace(a_mat @ sab2 @ a_mat.T) / (2 * denom))
        lam_value = float(np.clip(lam_unclipped, 0.0, 1.0))
        if lam_unclipped < 0:
            notes.append(
                f"the tuned lam is {lam_unclipped:.3f} < 0 (the judge's verdicts move against "
                "the humans'); clipped to 0: the human-only fit"
            )
    else:
        lam_value = lam
    theta = prob.solve(lam_value)
    if theta is None:
        raise SeparationError(
            f"PPI (lam = {lam_value:g}): the rectified loss has no finite minimum; no finite "
            "rating is given"
        )
    strength, cov = prob.fit(theta, lam_value)
    sampling = "stratified" if pi is not None else "uniform"
    same = np.minimum(votes.outcome[labelled], TIE) == np.minimum(codes[labelled], TIE)
    record = {
        "lam": lam_value,
        "n_labelled": n_lab,
        "sampling": sampling,
        "agreement": float(same.mean()),
    }
    ppi_fit = _as_fit(votes, strength, cov, "ppi", votes.n_votes, dict(record))
    judge_fit = fit_bradley_terry(votes, covariance="sandwich")
    human_fit = None
    theta0 = theta if lam_value == 0 else prob.solve(0.0)
    if theta0 is None:
        notes.append(
            "the human verdicts alone give no finite strengths (the labelled battles separate "
            "or disconnect some models): the human-only column is empty"
        )
    else:
        s0, c0 = prob.fit(theta0, 0.0)
        human_fit = _as_fit(votes, s0, c0, "sandwich", n_lab, {"lam": 0.0})
    var_p = np.diag(cov)
    if human_fit is not None:
        var_h = np.diag(human_fit.cov)
        with np.errstate(divide="ignore", invalid="ignore"):
            eff_model = np.where(var_p > 0, per_model * var_h / var_p, np.nan)
        effective = float(n_lab * var_h.sum() / var_p.sum()) if var_p.sum() > 0 else np.nan
    else:
        eff_model = np.full(votes.n_models, np.nan)
        effective = float("nan")
    warns: list[str] = []
    few = np.flatnonzero(per_model < MIN_LABELS)
    if few.size:
        shown = ", ".join(f"{votes.models[k]!r} ({int(per_model[k])})" for k in few[:5])
        more = f" and {few.size - 5} more" if few.size > 5 else ""
        warns.append(
            f"fewer than {MIN_LABELS} labelled battles for {shown}{more}: the PPI intervals "
            "are asymptotic in the labelled count and lam is estimated from these labels; "
            "label more battles, or fix lam"
        )
    every_labelled = n_lab == votes.n_votes
    if every_labelled and lam != "auto":  # (auto says so where it sets lam = 1)
        notes.append(
            "every battle has a human verdict: the rectified loss is the human-only loss for "
            "any lam, so the PPI fit is the human-only fit"
        )
    # lam = 0 given by the caller is the human-only fit by request, not a finding
    chosen_zero = lam != "auto" and lam_value == 0.0
    if (
        np.isfinite(effective)
        and effective < MIN_GAIN * n_lab
        and not every_labelled
        and not chosen_zero
    ):
        warns.append(
            f"PPI gains nothing over human-only: effective labels {effective:.1f} from {n_lab} "
            f"labelled battles (lam = {lam_value:.3f}); the judge's verdicts carry (almost) no "
            "information about the humans'"
        )
    for message in warns + notes:
        warnings.warn(message, RankciWarning, stacklevel=2)
    return PPIBradleyTerry(
        fit=ppi_fit,
        judge_fit=judge_fit,
        human_fit=human_fit,
        lam=lam_value,
        lam_rule="auto" if lam == "auto" else "fixed",
        lam_unclipped=lam_unclipped,
        n_battles=votes.n_votes,
        n_labelled=n_lab,
        n_labelled_model=per_model,
        effective_labels=effective,
        effective_labels_model=eff_model,
        sampling=record["sampling"],
        warnings=tuple(warns),
        notes=tuple(notes),
        details=record,
    )


#: The name of the first version (branch a-ppi-votes).
PPIVotesFit = PPIBradleyTerry
