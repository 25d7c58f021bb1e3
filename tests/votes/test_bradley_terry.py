"""The Bradley-Terry fit (rankci.votes.bradley_terry) against independent references.

* strengths and the three covariances against statsmodels ``Logit`` on the +-1 design;
* Davidson and Rao-Kupper against a direct scipy.optimize maximisation of the per-vote
  likelihood written here;
* position and style-control coefficients against a statsmodels logit with the same columns;
* the errors of a disconnected board, one vote, all ties and separation.
"""

import math
import re

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.optimize import minimize

from rankci.votes import ConnectivityError, SeparationError, Votes, fit_bradley_terry
from rankci.votes.bradley_terry import ELO_SCALE, comparison_pools, separation_report

WINNER_CODE = {"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 3}


def votes_from_frame(frame: pd.DataFrame, columns=()) -> Votes:
    """model_a / model_b / winner -> Votes (a test helper only; the readers are elsewhere)."""
    models = sorted(set(frame["model_a"]) | set(frame["model_b"]))
    code = {m: k for k, m in enumerate(models)}
    return Votes.from_arrays(
        frame["model_a"].map(code).to_numpy(),
        frame["model_b"].map(code).to_numpy(),
        frame["winner"].map(WINNER_CODE).to_numpy(),
        models=models,
        columns={c: frame[c].to_numpy() for c in columns},
    )


def simulated_frame(m=6, n=4000, tie_rate=0.15, seed=1, prompts=400):
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 0.8, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    winner = np.where(
        rng.random(n) < tie_rate,
        np.where(rng.random(n) < 0.5, "tie", "tie (bothbad)"),
        np.where(rng.random(n) < p, "model_a", "model_b"),
    )
    names = np.array([f"model-{k}" for k in range(m)])
    return pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": winner,
            "prompt": rng.integers(0, prompts, n),
            "len_a": rng.integers(50, 800, n).astype(float),
            "len_b": rng.integers(50, 800, n).astype(float),
        }
    )


def pm1_design(frame, models):
    """The +-1 design of the votes, model 0's column dropped (the reference)."""
    code = {m: k for k, m in enumerate(models)}
    a = frame["model_a"].map(code).to_numpy()
    b = frame["model_b"].map(code).to_numpy()
    x = np.zeros((len(frame), len(models)))
    x[np.arange(len(frame)), a] = 1.0
    x[np.arange(len(frame)), b] = -1.0
    return x[:, 1:]


def centred(params, m):
    full = np.concatenate([[0.0], params[: m - 1]])
    return full - full.mean()


def centred_cov(cov, m):
    full = np.zeros((m, m))
    full[1:, 1:] = cov[: m - 1, : m - 1]
    c = np.eye(m) - 1.0 / m
    return c @ full @ c.T


FRAME = simulated_frame()
VOTES = votes_from_frame(FRAME, columns=("prompt", "len_a", "len_b"))
Y_HALF = FRAME["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5})


def test_strengths_equal_statsmodels_logit_with_ties_as_duplicated_rows():
    # A tie is one win row and one loss row; a decisive vote two identical rows: the same
    # likelihood up to a factor 2, so the same maximum.
    x = pm1_design(FRAME, VOTES.models)
    y = Y_HALF.to_numpy()
    decisive = y != 0.5
    xx = np.concatenate([x[decisive], x[decisive], x[~decisive], x[~decisive]])
    yy = np.concatenate(
        [y[decisive], y[decisive], np.ones((~decisive).sum()), np.zeros((~decisive).sum())]
    )
    ref = sm.Logit(yy, xx).fit(disp=0, method="newton", tol=1e-12)
    fit = fit_bradley_terry(VOTES, covariance="model")
    m = VOTES.n_models
    np.testing.assert_allclose(fit.strength, centred(ref.params, m), atol=1e-6)
    assert abs(fit.strength.sum()) < 1e-12
    # the duplicated rows double the information: the model covariance is twice statsmodels'
    np.testing.assert_allclose(
        fit.cov_model, 2 * centred_cov(ref.cov_params(), m), rtol=1e-6, atol=1e-12
    )


@pytest.mark.parametrize(
    "covariance, kwargs",
    [
        ("model", {}),
        ("sandwich", {"cov_type": "HC0"}),
        ("cluster", {"cov_type": "cluster", "cov_kwds": {"groups": FRAME["prompt"].to_numpy()}}),
    ],
)
def test_covariances_equal_statsmodels(covariance, kwargs):
    # statsmodels' cluster covariance: G/(G-1) (N-1)/(N-K) with N votes and K free parameters
    x = pm1_design(FRAME, VOTES.models)
    ref = sm.Logit(Y_HALF.to_numpy(), x).fit(disp=0, method="newton", tol=1e-12, **kwargs)
    fit = fit_bradley_terry(
        VOTES, covariance=covariance, cluster="prompt" if covariance == "cluster" else None
    )
    m = VOTES.n_models
    np.testing.assert_allclose(fit.strength, centred(ref.params, m), atol=1e-6)
    np.testing.assert_allclose(
        fit.cov, centred_cov(np.asarray(ref.cov_params()), m), rtol=1e-6, atol=1e-12
    )
    assert np.allclose(fit.cov.sum(axis=1), 0, atol=1e-12)  # the centred scale
    if covariance == "cluster":
        assert fit.n_clusters == FRAME["prompt"].nunique()


def test_position_parameter_equals_statsmodels_with_a_constant():
    frame = FRAME.copy()
    rng = np.random.default_rng(5)
    position = rng.integers(0, 2, len(frame))  # 1: model_b was shown first
    votes = votes_from_frame(frame.assign(position=position), columns=("position",))
    y = Y_HALF.to_numpy()
    sign = np.where(position == 1, -1.0, 1.0)
    x = pm1_design(frame, votes.models)
    # P(a wins) = sigmoid(s_a - s_b + gamma * [a first - b first])
    design = np.column_stack([x, sign])
    ref = sm.Logit(y, design).fit(disp=0, method="newton", tol=1e-12, cov_type="HC0")
    fit = fit_bradley_terry(votes, position=True, covariance="sandwich")
    m = votes.n_models
    np.testing.assert_allclose(fit.strength, centred(ref.params, m), atol=1e-6)
    assert fit.coef["position"]["estimate"] == pytest.approx(ref.params[-1], abs=1e-6)
    assert fit.coef["position"]["se"] == pytest.approx(ref.bse[-1], rel=1e-6)


def test_style_control_coefficients_equal_statsmodels_logit():
    la, lb = FRAME["len_a"].to_numpy(), FRAME["len_b"].to_numpy()
    # the y of length is made to matter: re-draw the outcomes with a length effect
    rng = np.random.default_rng(11)
    diff = (la - lb) / (la + lb)
    feature = (diff - diff.mean()) / diff.std()
    x = pm1_design(FRAME, VOTES.models)
    fit0 = fit_bradley_terry(VOTES, covariance="model")
    eta = x @ (fit0.strength[1:] - fit0.strength[0]) + 0.4 * feature
    y = (rng.random(len(FRAME)) < 1 / (1 + np.exp(-eta))).astype(float)
    frame = FRAME.assign(winner=np.where(y == 1, "model_a", "model_b"))
    votes = votes_from_frame(frame, columns=("prompt", "len_a", "len_b"))
    ref = sm.Logit(y, np.column_stack([x, feature])).fit(
        disp=0,
        method="newton",
        tol=1e-12,
        cov_type="cluster",
        cov_kwds={"groups": frame["prompt"].to_numpy()},
    )
    fit = fit_bradley_terry(votes, covariates=["len"], covariance="cluster", cluster="prompt")
    assert fit.coef["len"]["estimate"] == pytest.approx(ref.params[-1], abs=1e-6)
    assert fit.coef["len"]["se"] == pytest.approx(ref.bse[-1], rel=1e-6)
    np.testing.assert_allclose(fit.strength, centred(ref.params, votes.n_models), atol=1e-6)


def _direct_tie_fit(votes, ties):
    """Maximise the per-vote likelihood with scipy (model 0 fixed at 0), written from the papers."""
    a, b, o = votes.a, votes.b, votes.outcome
    m = votes.n_models
    win_a, win_b, tie = o == 0, o == 1, o >= 2

    def nll(par):
        s = np.concatenate([[0.0], par[: m - 1]])
        pi_a, pi_b = np.exp(s[a]), np.exp(s[b])
        if ties == "davidson":  # Davidson (1970), eq. (2.1)
            nu = np.exp(par[-1])
            den = pi_a + pi_b + nu * np.sqrt(pi_a * pi_b)
            pa, pb, pt = pi_a / den, pi_b / den, nu * np.sqrt(pi_a * pi_b) / den
        else:  # Rao and Kupper (1967): theta >= 1
            theta = 1 + np.exp(par[-1])
            pa = pi_a / (pi_a + theta * pi_b)
            pb = pi_b / (pi_b + theta * pi_a)
            pt = (theta**2 - 1) * pi_a * pi_b / ((pi_a + theta * pi_b) * (pi_b + theta * pi_a))
        return -(np.log(pa[win_a]).sum() + np.log(pb[win_b]).sum() + np.log(pt[tie]).sum())

    res = minimize(nll, np.zeros(m), method="BFGS", options={"gtol": 1e-9, "maxiter": 5000})
    tie_value = math.exp(res.x[-1]) if ties == "davidson" else 1 + math.exp(res.x[-1])
    return centred(res.x, m), tie_value, -res.fun


@pytest.mark.parametrize("ties", ["davidson", "rao-kupper"])
def test_tie_models_equal_a_direct_likelihood_maximisation(ties):
    fit = fit_bradley_terry(VOTES, ties=ties, covariance="model")
    strength, tie_value, loglik = _direct_tie_fit(VOTES, ties)
    np.testing.assert_allclose(fit.strength, strength, atol=1e-5)
    assert fit.tie_parameter["value"] == pytest.approx(tie_value, rel=1e-5)
    assert fit.loglik == pytest.approx(loglik, rel=1e-9)
    assert fit.tie_parameter["name"] == {"davidson": "nu", "rao-kupper": "theta"}[ties]


@pytest.mark.parametrize("ties", ["davidson", "rao-kupper"])
def test_tie_model_covariance_matches_the_bootstrap_spread(ties):
    # the inverse expected information against the spread of 60 vote-bootstrap re-fits
    votes = votes_from_frame(simulated_frame(m=4, n=20000, seed=3))
    fit = fit_bradley_terry(votes, ties=ties, covariance="model")
    se = np.sqrt(np.diag(fit.cov_model))
    a, b, o = votes.a, votes.b, votes.outcome
    boot = []
    rng = np.random.default_rng(0)
    for _ in range(60):
        idx = rng.integers(0, votes.n_votes, votes.n_votes)
        v = Votes.from_arrays(a[idx], b[idx], o[idx], models=votes.models)
        boot.append(fit_bradley_terry(v, ties=ties, covariance="model").strength)
    np.testing.assert_allclose(np.std(boot, axis=0, ddof=1), se, rtol=0.3)


def test_the_log_likelihood_on_pair_counts_equals_the_per_vote_sum():
    fit = fit_bradley_terry(VOTES, covariance="model")
    s = fit.strength
    d = s[VOTES.a] - s[VOTES.b]
    y = Y_HALF.to_numpy()
    direct = (y * -np.logaddexp(0, -d) + (1 - y) * -np.logaddexp(0, d)).sum()
    assert fit.loglik == pytest.approx(direct, rel=1e-12)


def test_bootstrap_covariance_is_seeded_and_near_the_cluster_sandwich():
    one = fit_bradley_terry(
        VOTES, covariance="bootstrap", cluster="prompt", rng=4, bootstrap_reps=150
    )
    two = fit_bradley_terry(
        VOTES, covariance="bootstrap", cluster="prompt", rng=4, bootstrap_reps=150
    )
    np.testing.assert_array_equal(one.cov, two.cov)
    sandwich = fit_bradley_terry(VOTES, covariance="cluster", cluster="prompt")
    np.testing.assert_allclose(one.se, sandwich.se, rtol=0.25)
    assert one.details["bootstrap_used"] + one.details["bootstrap_failed"] == 150


def test_elo_display_and_rank_ub():
    fit = fit_bradley_terry(VOTES)
    anchor = VOTES.models[2]
    rating = fit.ratings(anchor, 1200.0)
    assert rating[2] == pytest.approx(1200.0)
    np.testing.assert_allclose(
        rating - rating[2], 400 / np.log(10) * (fit.strength - fit.strength[2])
    )
    assert ELO_SCALE == pytest.approx(173.7177927613007)
    lo, hi = fit.strength - 1.959963984540054 * fit.se, fit.strength + 1.959963984540054 * fit.se
    expected = [1 + sum(lo[l] > hi[j] for l in range(len(lo))) for j in range(len(lo))]
    assert fit.rank_ub().tolist() == expected
    with pytest.raises(ValueError, match="elo_anchor 'nobody'"):
        fit.ratings("nobody")


# ------------------------------------------------------------------------------ the errors
def test_a_disconnected_board_is_refused_naming_the_pools():
    frame = pd.DataFrame(
        {
            "model_a": ["a", "b", "a", "c", "d", "c"],
            "model_b": ["b", "a", "b", "d", "c", "d"],
            "winner": ["model_a", "model_a", "tie", "model_b", "model_a", "model_a"],
        }
    )
    votes = votes_from_frame(frame)
    assert comparison_pools(votes) == [["a", "b"], ["c", "d"]]
    with pytest.raises(
        ConnectivityError,
        match=re.escape("2 disconnected pools: {a, b} (2 models); {c, d} (2 models)"),
    ) as err:
        fit_bradley_terry(votes)
    assert err.value.pools == [["a", "b"], ["c", "d"]]


def test_one_vote_and_all_ties_are_refused():
    one = Votes.from_arrays([0], [1], [0], models=["a", "b"])
    with pytest.raises(ValueError, match="1 vote"):
        fit_bradley_terry(one)
    ties = Votes.from_arrays([0, 1, 0], [1, 2, 2], [2, 3, 2], models=["a", "b", "c"])
    with pytest.raises(ValueError, match="all 3 votes are ties"):
        fit_bradley_terry(ties)
    no_ties = Votes.from_arrays([0, 1, 1, 2], [1, 0, 2, 1], [0, 0, 0, 0], models=["a", "b", "c"])
    with pytest.raises(
        ValueError, match="ties='davidson' fits a tie parameter, but no vote is a tie"
    ):
        fit_bradley_terry(no_ties, ties="davidson")


def test_separation_says_what_the_data_support():
    frame = pd.DataFrame(
        {
            "model_a": ["m", "m", "x", "y", "x", "m"],
            "model_b": ["x", "y", "y", "x", "y", "x"],
            "winner": ["model_a", "model_a", "model_a", "model_a", "tie", "model_a"],
        }
    )
    votes = votes_from_frame(frame)
    assert separation_report(votes) == {"m": "lower bound", "x": "upper bound", "y": "upper bound"}
    with pytest.raises(
        SeparationError,
        match="'m' beat everyone it met: only a lower bound on its strength is supported",
    ) as err:
        fit_bradley_terry(votes)
    assert err.value.supported["m"] == "lower bound"
    assert "No finite rating" in str(err.value)


def test_a_loser_is_named_with_an_upper_bound():
    frame = pd.DataFrame(
        {
            "model_a": ["x", "y", "x", "z", "z"],
            "model_b": ["y", "x", "z", "y", "x"],
            "winner": ["model_a", "model_a", "model_a", "model_b", "model_b"],
        }
    )
    with pytest.raises(
        SeparationError, match="'z' lost to everyone it met: only an upper bound is supported"
    ):
        fit_bradley_terry(votes_from_frame(frame))


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="unknown ties .draws.; choose one of"):
        fit_bradley_terry(VOTES, ties="draws")
    with pytest.raises(ValueError, match="covariance='cluster' needs cluster="):
        fit_bradley_terry(VOTES, covariance="cluster")
    with pytest.raises(ValueError, match="cluster='voter' is not a column"):
        fit_bradley_terry(VOTES, covariance="cluster", cluster="voter")
    with pytest.raises(ValueError, match="covariates: no column 'markdown'"):
        fit_bradley_terry(VOTES, covariates=["markdown"])
    bad = votes_from_frame(FRAME.assign(position="left"), columns=("position",))
    with pytest.raises(ValueError, match=re.escape("columns['position'][0] = 'left'")):
        fit_bradley_terry(bad, position=True)
