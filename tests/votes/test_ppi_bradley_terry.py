"""Prediction-powered Bradley-Terry (rankci.votes.ppi) against independent references.

* lam = 0 is the human-only fit: statsmodels ``Logit`` (HC0) on the labelled votes;
* any lam, uniform or stratified labelling: a direct scipy.optimize minimisation of the rectified
  loss written here per vote, with a finite-difference Hessian and per-vote finite-difference
  gradients for the sandwich;
* the tuned lam against a scalar minimisation of the covariance trace written here;
* judge == human with every battle labelled is the plain fit;
* bad input: verdicts outside the allowed values, a model with no labelled battle, no labels.
"""

import re
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.optimize import minimize, minimize_scalar

from rankci._base import RankciWarning
from rankci.votes import Votes, fit_bradley_terry
from rankci.votes.ppi import fit_ppi_bradley_terry

M = 4
MODELS = ["m0", "m1", "m2", "m3"]


def arena(n=1500, n_lab=300, ties=0.0, seed=3, stratified=False):
    """Battles with human verdicts from a Bradley-Terry truth; the judge agrees with the human
    70 % of the time and otherwise favours m3 (a model-specific bias)."""
    rng = np.random.default_rng(seed)
    s = np.array([0.6, 0.2, -0.2, -0.6])
    a = rng.integers(0, M, n)
    b = (a + rng.integers(1, M, n)) % M
    p = 1 / (1 + np.exp(s[b] - s[a]))
    u = rng.random(n)
    human = np.where(u < ties, 2, np.where(rng.random(n) < p, 0, 1))
    favour = np.where(a == 3, 0, np.where(b == 3, 1, rng.integers(0, 2, n)))
    judge = np.where(rng.random(n) < 0.7, human, favour)
    if stratified:
        pi = np.where((a == 3) | (b == 3), 0.4, 0.15)
        lab = rng.random(n) < pi
    else:
        pi = None
        lab = np.zeros(n, bool)
        lab[rng.choice(n, n_lab, replace=False)] = True
    h = np.where(lab, human, -1).astype(float)
    h[~lab] = np.nan
    votes = Votes.from_arrays(a, b, judge, models=MODELS)
    return votes, h, pi


def fit_quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        return fit_ppi_bradley_terry(*args, **kwargs)


# ------------------------------------------------------------------ the independent reference
def y_of(outcome, a, b):
    """1 if a won, 0 if b won, 1/2 for a tie (a is the first model of the vote)."""
    return np.where(outcome >= 2, 0.5, np.where(outcome == 0, 1.0, 0.0))


def vote_losses(theta, a, b, y):
    full = np.concatenate([[0.0], theta])
    d = full[a] - full[b]
    return -(y * -np.logaddexp(0, -d) + (1 - y) * -np.logaddexp(0, d))


def reference(votes, h, lam, pi=None):
    """argmin of the rectified loss by BFGS, sandwich by finite differences; centred output."""
    a, b = votes.a, votes.b
    n = votes.n_votes
    lab = np.isfinite(h)
    yf = y_of(votes.outcome, a, b)
    yh = y_of(np.where(lab, h, 0), a, b)
    w = np.where(lab, 1.0 if pi is None else 1.0 / np.where(lab, pi, 1.0), 0.0)
    w = w * n / w.sum()

    def loss(theta):
        lf, lh = vote_losses(theta, a, b, yf), vote_losses(theta, a, b, yh)
        return (lam * lf + w * (lh - lam * lf)).mean()

    res = minimize(loss, np.zeros(M - 1), method="BFGS", options={"gtol": 1e-11})
    theta = res.x
    eps = 1e-5
    k = M - 1
    gf, gh = np.empty((n, k)), np.empty((n, k))
    hess = np.empty((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = eps
        gf[:, j] = (vote_losses(theta + e, a, b, yf) - vote_losses(theta - e, a, b, yf)) / (2 * eps)
        gh[:, j] = (vote_losses(theta + e, a, b, yh) - vote_losses(theta - e, a, b, yh)) / (2 * eps)
    for i in range(k):
        for j in range(k):
            ei, ej = np.zeros(k), np.zeros(k)
            ei[i], ej[j] = 1e-4, 1e-4
            hess[i, j] = (
                loss(theta + ei + ej)
                - loss(theta + ei - ej)
                - loss(theta - ei + ej)
                + loss(theta - ei - ej)
            ) / (4e-8)
    delta = gh - lam * gf
    dbar = (w[:, None] * delta).sum(0) / n
    psi = lam * gf + w[:, None] * (delta - dbar)
    centred_psi = psi - psi.mean(0)
    meat = centred_psi.T @ centred_psi / n**2
    binv = np.linalg.inv(hess)
    cov_free = binv @ meat @ binv
    c = np.eye(M) - 1.0 / M
    jac = c[:, 1:]
    return c @ np.concatenate([[0.0], theta]), jac @ cov_free @ jac.T, (gf, gh, w, hess)


# ------------------------------------------------------------------------------------ tests
def test_lam_zero_equals_statsmodels_logit_on_the_labelled_votes():
    votes, h, _ = arena()
    out = fit_quiet(votes, h, lam=0.0)
    lab = np.isfinite(h)
    a, b = votes.a[lab], votes.b[lab]
    x = np.zeros((lab.sum(), M))
    x[np.arange(lab.sum()), a] = 1
    x[np.arange(lab.sum()), b] -= 1
    y = (h[lab] == 0).astype(float)
    ref = sm.Logit(y, x[:, 1:]).fit(disp=0, method="newton", tol=1e-12, cov_type="HC0")
    c = np.eye(M) - 1.0 / M
    strength = c @ np.concatenate([[0.0], ref.params])
    cov = c[:, 1:] @ ref.cov_params() @ c[:, 1:].T
    np.testing.assert_allclose(out.fit.strength, strength, atol=1e-6)
    np.testing.assert_allclose(out.fit.cov, cov, atol=1e-6)
    np.testing.assert_allclose(out.human_fit.strength, strength, atol=1e-6)
    assert out.lam == 0.0 and out.lam_rule == "fixed"


@pytest.mark.parametrize("lam", [0.3, 1.0])
@pytest.mark.parametrize("stratified", [False, True])
def test_estimate_and_covariance_equal_a_direct_minimisation(lam, stratified):
    votes, h, pi = arena(ties=0.15, stratified=stratified)
    out = fit_quiet(votes, h, lam=lam, inclusion=pi)
    strength, cov, _ = reference(votes, h, lam, pi)
    np.testing.assert_allclose(out.fit.strength, strength, atol=1e-5)
    np.testing.assert_allclose(out.fit.cov, cov, rtol=1e-4, atol=1e-9)
    assert out.sampling == ("stratified" if stratified else "uniform")


def test_tuned_lam_minimises_the_covariance_trace():
    votes, h, _ = arena(n=2000, n_lab=400, ties=0.1, seed=5)
    out = fit_quiet(votes, h)
    _, _, (gf, gh, w, hess) = reference(votes, h, 1.0)  # gradients at the lam = 1 fit
    n = votes.n_votes
    c = np.eye(M) - 1.0 / M
    a_mat = c[:, 1:] @ np.linalg.inv(hess)

    def trace(lam):
        delta = gh - lam * gf
        psi = lam * gf + w[:, None] * (delta - (w[:, None] * delta).sum(0) / n)
        psi = psi - psi.mean(0)
        return np.trace(a_mat @ (psi.T @ psi / n**2) @ a_mat.T)

    best = minimize_scalar(trace, bounds=(-2, 3), method="bounded", options={"xatol": 1e-8}).x
    assert out.lam_rule == "auto"
    assert out.lam_unclipped == pytest.approx(best, abs=1e-4)
    assert out.lam == pytest.approx(min(max(best, 0.0), 1.0), abs=1e-4)
    assert 0 < out.lam < 1  # a useful judge: the test would not see a clipping bug otherwise


def test_a_useful_judge_gains_effective_labels():
    votes, h, _ = arena(n=3000, n_lab=300, seed=7)
    out = fit_quiet(votes, h)
    assert out.effective_labels > 1.1 * out.n_labelled
    assert np.trace(out.fit.cov) < np.trace(out.human_fit.cov)
    frame = out.fits
    assert list(frame.columns[:7]) == [
        "model",
        "judge",
        "judge_se",
        "human",
        "human_se",
        "ppi",
        "ppi_se",
    ]
    # the judge favours m3: the judge-only strength of m3 is above the PPI one
    assert frame.loc[3, "judge"] > frame.loc[3, "ppi"] + 0.2


@pytest.mark.parametrize("lam", [0.0, 0.5, "auto"])
def test_judge_equal_to_human_with_every_battle_labelled_is_the_plain_fit(lam):
    votes, _, _ = arena(ties=0.1)
    out = fit_quiet(votes, votes.outcome.astype(float), lam=lam)
    plain = fit_bradley_terry(votes, covariance="sandwich")
    np.testing.assert_allclose(out.fit.strength, plain.strength, atol=1e-8)
    np.testing.assert_allclose(out.fit.cov, plain.cov, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(out.judge_fit.strength, plain.strength, atol=1e-12)


def test_few_labels_and_weak_judge_warn():
    votes, h, _ = arena(n=1500, n_lab=60)
    rng = np.random.default_rng(0)
    noise = Votes.from_arrays(votes.a, votes.b, rng.integers(0, 2, votes.n_votes), models=MODELS)
    with pytest.warns(RankciWarning) as record:
        out = fit_ppi_bradley_terry(noise, h)
    text = " ".join(str(r.message) for r in record)
    assert "fewer than 50 labelled battles" in text
    assert "PPI gains nothing over human-only" in text
    assert out.warnings


def test_a_verdict_outside_the_allowed_values_is_refused():
    votes, h, _ = arena()
    bad = h.astype(object)
    k = int(np.flatnonzero(np.isfinite(h))[3])
    bad[k] = "model_c"
    with pytest.raises(ValueError, match=re.escape(f"vote {k}: 'model_c' is not a verdict")):
        fit_ppi_bradley_terry(votes, bad)
    bad[k] = 7
    with pytest.raises(ValueError, match=f"vote {k}: 7 is not a verdict"):
        fit_ppi_bradley_terry(votes, bad)


def test_a_model_with_no_labelled_battle_is_refused():
    votes, h, _ = arena()
    h = h.copy()
    h[(votes.a == 2) | (votes.b == 2)] = np.nan
    with pytest.raises(ValueError, match=r"'m2' have no labelled battle in the human column"):
        fit_ppi_bradley_terry(votes, h)


def test_no_labels_and_bad_inclusion_and_lam_are_refused():
    votes, h, _ = arena()
    with pytest.raises(ValueError, match="has no verdict: no battle is labelled"):
        fit_ppi_bradley_terry(votes, np.full(votes.n_votes, np.nan))
    pi = np.full(votes.n_votes, 0.2)
    pi[np.flatnonzero(np.isfinite(h))[0]] = 0.0
    with pytest.raises(ValueError, match=r"is not a probability in \(0, 1\]"):
        fit_ppi_bradley_terry(votes, h, inclusion=pi)
    with pytest.raises(ValueError, match="lam must be 'auto' or a number in"):
        fit_ppi_bradley_terry(votes, h, lam=1.5)
    with pytest.raises(ValueError, match="the human column 'verdict' is not a column"):
        fit_ppi_bradley_terry(votes, "verdict")


# ------------------------------------------------------------------------------ rank_votes
def arena_votes(**kwargs):
    votes, h, pi = arena(**kwargs)
    columns = {"human": h} if pi is None else {"human": h, "pi": pi}
    return Votes.from_arrays(votes.a, votes.b, votes.outcome, models=MODELS, columns=columns)


def test_rank_votes_certifies_the_ppi_fit_and_records_the_settings():
    from rankci.certify.maxt import maxt_ranking_from_cov
    from rankci.votes import VotesSpec, rank_votes

    votes = arena_votes(n=3000, n_lab=400, stratified=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        r = rank_votes(votes, human="human", inclusion="pi", lam=0.4, seed=3)
        fit = fit_ppi_bradley_terry(votes, "human", inclusion="pi", lam=0.4)
        ref = maxt_ranking_from_cov(fit.fit.strength, fit.fit.cov, models=MODELS, rng=3)
    np.testing.assert_allclose(r.score, fit.fit.strength, atol=1e-12)
    assert r.lower.tolist() == ref.lower.tolist() and r.upper.tolist() == ref.upper.tolist()
    spec = r.spec.to_dict()
    assert (spec["human"], spec["inclusion"], spec["lam"], spec["covariance"]) == (
        "human",
        "pi",
        0.4,
        "ppi",
    )
    assert "prediction-powered" in r.guarantee and "lam = 0.400" in r.guarantee
    rows = r.details["ppi"]["fits"]
    assert {"judge_rank", "human_rank", "ppi_rank", "effective_labels"} <= set(rows[0])
    assert [row["ppi_rank"] for row in rows] == [[lo, hi] for lo, hi in zip(r.lower, r.upper)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        again = rank_votes(votes, spec=VotesSpec.from_dict(spec))
    assert again.lower.tolist() == r.lower.tolist()
    np.testing.assert_allclose(again.score, r.score)


def test_rank_votes_refuses_what_ppi_does_not_offer():
    from rankci.votes import rank_votes

    votes = arena_votes()
    with pytest.raises(ValueError, match="supports ties='half'"):
        rank_votes(votes, human="human", ties="davidson")
    with pytest.raises(ValueError, match="cluster='voter' is not offered"):
        rank_votes(votes, human="human", cluster="voter")
    with pytest.raises(ValueError, match="apply with human="):
        rank_votes(votes, lam=0.5)
