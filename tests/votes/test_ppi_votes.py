"""PPI++ Bradley-Terry (rankci.votes.ppi) against independent references."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from rankci import RankciWarning
from rankci.votes.bradley_terry import fit_bradley_terry
from rankci.votes.ppi import fit_ppi_bradley_terry
from rankci.votes.table import Votes


def _arena(seed=0, n=3000, m=4, n_lab=600, flip=0.2):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    s = np.linspace(1, -1, m)
    human = (rng.random(n) > 1 / (1 + np.exp(s[b] - s[a]))).astype(int)
    judge = np.where(rng.random(n) < flip, 1 - human, human)
    lab = np.zeros(n, dtype=bool)
    lab[rng.choice(n, n_lab, replace=False)] = True
    models = [f"m{k}" for k in range(m)]
    return Votes.from_arrays(a, b, judge, models=models), np.where(lab, human, -1)


def test_lam_zero_is_the_human_only_fit():
    votes, h = _arena()
    with warnings.catch_warnings():  # lam = 0 asked for: the human-only fit, nothing to warn of
        warnings.simplefilter("error", RankciWarning)
        fit = fit_ppi_bradley_terry(votes, h, lam=0.0)
    keep = h >= 0
    plain = fit_bradley_terry(
        Votes.from_arrays(votes.a[keep], votes.b[keep], h[keep], models=votes.models)
    )
    np.testing.assert_allclose(fit.ppi.strength, plain.strength, atol=1e-6)
    np.testing.assert_allclose(fit.ppi.cov, plain.cov, atol=1e-6)


def test_judge_equal_to_human_everywhere_is_the_plain_fit():
    votes, _ = _arena(flip=0.0)
    # every battle labelled: the judge cannot help, and the warning says why (not that the judge
    # is uninformative: here it is the humans exactly)
    with pytest.warns(RankciWarning, match="every battle has a human verdict") as caught:
        fit = fit_ppi_bradley_terry(votes, votes.outcome.astype(int), lam=0.7)
    assert not any("gains nothing" in str(w.message) for w in caught)
    plain = fit_bradley_terry(votes)
    np.testing.assert_allclose(fit.ppi.strength, plain.strength, atol=1e-6)
    np.testing.assert_allclose(fit.ppi.cov, plain.cov, atol=1e-8)
    with pytest.warns(RankciWarning, match="does not depend on lam") as caught:
        tuned = fit_ppi_bradley_terry(votes, votes.outcome.astype(int))
    assert tuned.lam == pytest.approx(1.0)
    assert not any("gains nothing" in str(w.message) for w in caught)


def test_against_a_direct_minimisation_and_numerical_sandwich():
    votes, h = _arena(seed=3)
    lam = 0.6
    fit = fit_ppi_bradley_terry(votes, h, lam=lam)
    n_all = votes.n_votes
    lab = h >= 0
    yf = (votes.outcome == 0).astype(float)  # the side of a
    yh = (h == 0).astype(float)
    u = np.where(lab, n_all / lab.sum(), 0.0)
    m = votes.n_models

    def per_battle_loss(free):
        th = np.concatenate([[0.0], free])
        d = th[votes.a] - th[votes.b]
        lf = -yf * d + np.logaddexp(0, d)
        lh = -yh * d + np.logaddexp(0, d)
        return lam * lf + u * (lh - lam * lf)

    res = minimize(
        lambda f: per_battle_loss(f).mean(), np.zeros(m - 1), method="BFGS", options={"gtol": 1e-12}
    )
    centred = np.concatenate([[0.0], res.x])
    centred -= centred.mean()
    np.testing.assert_allclose(fit.ppi.strength, centred, atol=1e-5)
    # sandwich from numerical derivatives of the judge part A_i and the labelled part B_i
    eps = 1e-5
    k = m - 1

    def parts(free):
        th = np.concatenate([[0.0], free])
        d = th[votes.a] - th[votes.b]
        lf = -yf * d + np.logaddexp(0, d)
        lh = -yh * d + np.logaddexp(0, d)
        return lam * lf, u * (lh - lam * lf)

    ga, gb = np.empty((n_all, k)), np.empty((n_all, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = eps
        (ap, bp), (am, bm) = parts(res.x + e), parts(res.x - e)
        ga[:, j], gb[:, j] = (ap - am) / (2 * eps), (bp - bm) / (2 * eps)
    hess = np.empty((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = 1e-4
        gp = np.array(
            [
                (
                    sum(parts(res.x + e + eps * np.eye(k)[i]))
                    - sum(parts(res.x + e - eps * np.eye(k)[i]))
                ).mean()
                / (2 * eps)
                for i in range(k)
            ]
        )
        gm = np.array(
            [
                (
                    sum(parts(res.x - e + eps * np.eye(k)[i]))
                    - sum(parts(res.x - e - eps * np.eye(k)[i]))
                ).mean()
                / (2 * eps)
                for i in range(k)
            ]
        )
        hess[:, j] = (gp - gm) / 2e-4
    gbar = gb.mean(0)
    psi = ga + gbar + gb - u[:, None] * gbar  # the Hajek-centred labelled part
    binv = np.linalg.inv(hess)
    cov_free = binv @ (psi.T @ psi / n_all**2) @ binv
    jac = np.eye(m)[:, 1:] - 1.0 / m
    np.testing.assert_allclose(fit.ppi.cov, jac @ cov_free @ jac.T, rtol=1e-3, atol=1e-8)


def test_bad_inputs_are_refused():
    votes, h = _arena()
    with pytest.raises(ValueError, match="no battle is labelled"):
        fit_ppi_bradley_terry(votes, np.full(votes.n_votes, -1))
    bad = h.copy()
    bad[5] = 7
    with pytest.raises(ValueError, match="vote 5: 7 is not a verdict"):
        fit_ppi_bradley_terry(votes, bad)
    none_for_m3 = np.where((votes.a == 3) | (votes.b == 3), -1, h)
    with pytest.raises(ValueError, match="'m3' have no labelled battle"):
        fit_ppi_bradley_terry(votes, none_for_m3)
    with pytest.raises(ValueError, match="lam"):
        fit_ppi_bradley_terry(votes, h, lam=1.5)


def test_lam_zero_matches_statsmodels_logit_hc0():
    import statsmodels.api as sm

    votes, h = _arena(seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankciWarning)
        fit = fit_ppi_bradley_terry(votes, h, lam=0.0)
    keep = h >= 0
    m = votes.n_models
    x = np.zeros((keep.sum(), m))
    x[np.arange(keep.sum()), votes.a[keep]] += 1
    x[np.arange(keep.sum()), votes.b[keep]] -= 1
    res = sm.Logit((h[keep] == 0).astype(float), x[:, 1:]).fit(disp=0, cov_type="HC0", tol=1e-12)
    jac = np.eye(m)[:, 1:] - 1.0 / m
    np.testing.assert_allclose(fit.ppi.strength, jac @ res.params, atol=1e-6)
    np.testing.assert_allclose(fit.ppi.cov, jac @ res.cov_params() @ jac.T, atol=1e-6)


def test_one_pair_against_ppi_python_logistic():
    from ppi_py import ppi_logistic_ci, ppi_logistic_pointestimate

    votes, h = _arena(seed=7, m=2, n=4000, n_lab=500, flip=0.15)
    keep = h >= 0
    # BT of two models = logistic regression with an intercept: beta = s_0 - s_1 (a = m0 side)
    y_judge = np.where(votes.a == 0, votes.outcome == 0, votes.outcome == 1).astype(float)
    y_human = np.where(votes.a == 0, h == 0, h == 1).astype(float)
    ones = np.ones((votes.n_votes, 1))
    for lam in (0.3, 0.8):
        fit = fit_ppi_bradley_terry(votes, h, lam=lam)
        beta = ppi_logistic_pointestimate(
            ones[keep], y_human[keep], y_judge[keep], ones, y_judge, lam=lam
        )
        assert fit.ppi.strength[0] - fit.ppi.strength[1] == pytest.approx(beta[0], abs=1e-5)
    auto = fit_ppi_bradley_terry(votes, h)
    lo, hi = ppi_logistic_ci(
        ones[keep], y_human[keep], y_judge[keep], ones, y_judge, alpha=0.05, lam=auto.lam
    )
    se_theirs = (hi[0] - lo[0]) / (2 * 1.959964)
    se_ours = np.sqrt(auto.ppi.cov[0, 0] + auto.ppi.cov[1, 1] - 2 * auto.ppi.cov[0, 1])
    # at the trace-optimal lam the cross term of the all-battles form vanishes (to first order):
    # the two variances agree up to ddof and the lam = 1 evaluation point of lam
    assert se_ours == pytest.approx(se_theirs, rel=0.02)


def test_ranking_of_the_ppi_fit_records_the_settings():
    from rankci.votes import rank_votes

    votes, h = _arena(seed=11, n=6000, n_lab=1500)
    fit = fit_ppi_bradley_terry(votes, h, lam=0.5)
    votes = Votes.from_arrays(votes.a, votes.b, votes.outcome, models=votes.models,
                              columns={"human": h})  # fmt: skip
    r = rank_votes(votes, human="human", lam=0.5, seed=1)
    assert "prediction-powered" in r.guarantee and "1500 human-labelled" in r.guarantee
    assert r.details["ppi"]["lam"] == 0.5
    np.testing.assert_allclose(r.score, fit.ppi.strength)
    assert (r.lower <= r.upper).all()
