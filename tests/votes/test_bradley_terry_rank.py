"""rank_votes: the Bradley-Terry board through the certify stage, and its JSON."""

import json

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from rankci import RankciWarning
from rankci.votes import Votes, VotesSpec, rank_votes


def board(m=7, n=12000, seed=2, spread=0.6, tie_rate=0.1):
    rng = np.random.default_rng(seed)
    s = np.linspace(spread, -spread, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    out = np.where(rng.random(n) < tie_rate, 2, np.where(rng.random(n) < p, 0, 1))
    prompt = rng.integers(0, 1500, n)
    return Votes.from_arrays(
        a, b, out, models=[f"m{k}" for k in range(m)], columns={"prompt": prompt}
    )


VOTES = board()


def test_holm_equals_statsmodels_z_tests_and_multipletests():
    # the oracle: statsmodels' strengths and cluster covariance, then Holm from multipletests
    m, n = VOTES.n_models, VOTES.n_votes
    x = np.zeros((n, m))
    x[np.arange(n), VOTES.a] = 1
    x[np.arange(n), VOTES.b] = -1
    y = np.where(VOTES.outcome == 0, 1.0, np.where(VOTES.outcome == 1, 0.0, 0.5))
    ref = sm.Logit(y, x[:, 1:]).fit(
        disp=0,
        method="newton",
        tol=1e-12,
        cov_type="cluster",
        cov_kwds={"groups": VOTES.columns["prompt"]},
    )
    s = np.concatenate([[0.0], ref.params])
    v = np.zeros((m, m))
    v[1:, 1:] = ref.cov_params()
    j, l = np.nonzero(~np.eye(m, dtype=bool))
    z = (s[j] - s[l]) / np.sqrt(v[j, j] + v[l, l] - 2 * v[j, l])
    rejected = multipletests(norm.sf(z), alpha=0.05, method="holm")[0]
    expected = np.zeros((m, m), dtype=bool)
    expected[j[rejected], l[rejected]] = True
    r = rank_votes(VOTES, multiplicity="holm", cluster="prompt")
    np.testing.assert_array_equal(r.dominance, expected)  # closed already: BT differences add up
    assert r.spec.covariance == "cluster" and r.spec.cluster == "prompt"
    np.testing.assert_allclose(r.score, s - s.mean(), atol=1e-6)


def test_maxt_is_at_least_as_sharp_as_holm_and_seeded():
    one = rank_votes(VOTES, seed=5)
    two = rank_votes(VOTES, seed=5)
    holm = rank_votes(VOTES, multiplicity="holm")
    np.testing.assert_array_equal(one.dominance, two.dominance)
    assert (one.dominance | ~holm.dominance).all()  # every Holm statement is a max-t statement
    assert one.spec.seed == 5 and one.spec.multiplicity == "max-t"


def test_a_fresh_seed_is_recorded_and_reproduces_the_ranking():
    r = rank_votes(VOTES)
    assert isinstance(r.spec.seed, int)
    again = rank_votes(VOTES, spec=VotesSpec.from_dict(r.to_dict()["spec"]))
    np.testing.assert_array_equal(again.dominance, r.dominance)
    np.testing.assert_array_equal(again.lower, r.lower)


def test_json_models_carry_score_rating_and_rank_ub():
    r = rank_votes(VOTES, seed=1, elo_anchor="m3", elo_rating=1100)
    out = json.loads(json.dumps(r.to_dict()))
    rows = {row["model"]: row for row in out["models"]}
    assert set(rows["m0"]) >= {"score", "rating", "rank_lower", "rank_upper", "rank_ub", "se"}
    assert rows["m3"]["rating"] == pytest.approx(1100)
    assert rows["m0"]["rating"] - rows["m3"]["rating"] == pytest.approx(
        400 / np.log(10) * (rows["m0"]["score"] - rows["m3"]["score"])
    )
    assert sum(row["score"] for row in out["models"]) == pytest.approx(0, abs=1e-12)
    spec = out["spec"]
    assert spec["flow"] == "votes"
    assert (spec["ties"], spec["covariance"], spec["cluster"], spec["seed"]) == (
        "half",
        "cluster",
        "prompt",
        1,
    )
    assert "Bradley-Terry fit of 12000 votes" in out["guarantee"]
    assert out["n_units"] == 12000


def test_rank_ub_is_never_a_simultaneous_statement_and_is_shown_beside():
    # A close board: Rank (UB) can claim separations that the certified intervals do not
    v = board(m=10, n=3000, spread=0.35, seed=4)
    r = rank_votes(v, seed=2)
    frame = r.to_frame()
    assert {"rank_ub", "rating"} <= set(frame.columns)
    assert (frame["rank_ub"] >= 1).all() and (frame["rank_ub"] <= frame["rank"]).all()


def test_position_and_covariate_coefficients_have_intervals():
    rng = np.random.default_rng(3)
    n = VOTES.n_votes
    columns = dict(
        VOTES.columns,
        position=rng.integers(0, 2, n),
        tokens_a=rng.integers(10, 900, n),
        tokens_b=rng.integers(10, 900, n),
    )
    v = Votes.from_arrays(VOTES.a, VOTES.b, VOTES.outcome, models=VOTES.models, columns=columns)
    r = rank_votes(v, position=True, covariates=["tokens"], seed=1)
    coefs = r.details["coefficients"]
    assert set(coefs) == {"position", "tokens"}
    for c in coefs.values():
        assert c["lower"] < c["estimate"] < c["upper"]
        assert c["upper"] - c["estimate"] == pytest.approx(1.959963984540054 * c["se"])


def test_ties_rule_reaches_the_fit_and_the_spec():
    r = rank_votes(VOTES, ties="davidson", covariance="model", seed=1)
    assert r.spec.ties == "davidson" and r.spec.cluster is None
    assert r.details["tie_parameter"]["name"] == "nu"
    assert "Davidson ties" in r.guarantee


def test_marginal_coverage_through_holm():
    r = rank_votes(VOTES, multiplicity="holm", coverage="marginal")
    assert r.dominance is None and r.coverage == "marginal"
    assert (r.lower <= r.rank).all() and (r.rank <= r.upper).all()


def test_nothing_certified_is_explained():
    v = board(m=4, n=200, spread=0.01, seed=9)
    with pytest.warns(RankciWarning, match="nothing certified: the largest z"):
        r = rank_votes(v, seed=1)
    assert not r.dominance.any()
    assert r.details["nothing_certified"].startswith("nothing certified: the largest z")


def test_an_unknown_anchor_is_refused_before_the_fit():
    with pytest.raises(ValueError, match="elo_anchor 'gpt-9' is not a model"):
        rank_votes(VOTES, elo_anchor="gpt-9")
