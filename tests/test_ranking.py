"""The shared counting code: closure, rank intervals, tiers, top-k, and the two builders."""

import json

import numpy as np
import pytest

import rankci
from rankci.certify.holm import reject
from rankci.ranking import (
    DominanceCycleError,
    observed_ranks,
    ranking_from_dominance,
    tiers,
    transitive_closure,
)


def _ranking(dominance, score=None):
    m = len(dominance)
    score = np.arange(m, 0, -1.0) if score is None else score
    return ranking_from_dominance(
        [f"m{k}" for k in range(m)],
        score,
        np.array(dominance, dtype=bool),
        alpha=0.05,
        coverage="simultaneous",
        procedure={},
        n_units=10,
        excluded={},
        guarantee="",
    )


def test_counting_from_a_hand_built_order():
    # a > b, b > d, c > d (so a > d by transitivity); nothing between a and c
    d = np.zeros((4, 4), dtype=bool)
    d[0, 1] = d[1, 3] = d[2, 3] = True
    r = _ranking(d)
    assert r.dominance[0, 3]  # closure
    assert r.lower.tolist() == [1, 2, 1, 4]
    assert r.upper.tolist() == [2, 3, 3, 4]
    assert r.tier.tolist() == [1, 2, 1, 3]
    assert r.top_k(1).tolist() == ["undetermined", "out", "undetermined", "out"]
    assert r.top_k(3).tolist() == ["in", "in", "in", "out"]
    assert ("m0", "m3") in r.dominance_pairs()


def test_a_long_chain_closes_completely():
    m = 40
    chain = np.zeros((m, m), dtype=bool)
    chain[np.arange(m - 1), np.arange(1, m)] = True
    closed = transitive_closure(chain)
    assert closed.sum() == m * (m - 1) // 2
    assert tiers(closed).tolist() == list(range(1, m + 1))


def test_a_cycle_is_an_error_naming_its_models():
    d = np.zeros((4, 4), dtype=bool)
    d[0, 1] = d[1, 2] = d[2, 0] = True
    with pytest.raises(DominanceCycleError, match="'m0', 'm1', 'm2'"):
        _ranking(d)


def test_observed_ranks_share_the_better_rank_on_ties():
    assert observed_ranks([0.5, 0.7, 0.5, 0.1]).tolist() == [2, 1, 2, 4]


def _holm_by_hand(p, alpha):
    """Holm written out step by step, independent of rankci.certify.holm."""
    flat = [(p[j, l], j, l) for j in range(len(p)) for l in range(len(p)) if j != l]
    flat.sort()
    rejected = set()
    for i, (value, j, l) in enumerate(flat):
        if value > alpha / (len(flat) - i):
            break
        rejected.add((j, l))
    return rejected


def test_simultaneous_ranking_is_holm_then_counting():
    rng = np.random.default_rng(3)
    x = (rng.random((400, 6)) < np.linspace(0.75, 0.45, 6)).astype(float)
    pw = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), "t")
    r = rankci.certify_holm(pw, 0.05, "simultaneous").ranking()
    by_hand = _holm_by_hand(pw.pvalue, 0.05)
    closed = {(j, l) for j, l in zip(*np.nonzero(r.dominance))}
    assert by_hand <= closed
    for j in range(6):
        assert r.lower[j] == 1 + sum((l, j) in closed for l in range(6))
        assert r.upper[j] == 6 - sum((j, l) in closed for l in range(6))


def test_marginal_ranking_uses_each_models_own_families():
    rng = np.random.default_rng(4)
    x = (rng.random((300, 5)) < np.linspace(0.7, 0.5, 5)).astype(float)
    pw = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), "t")
    r = rankci.certify_holm(pw, 0.1, "marginal").ranking()
    for j in range(5):
        others = [l for l in range(5) if l != j]
        above = reject(np.array([pw.pvalue[l, j] for l in others]), 0.05).sum()
        below = reject(np.array([pw.pvalue[j, l] for l in others]), 0.05).sum()
        assert (r.lower[j], r.upper[j]) == (1 + above, 5 - below)
    assert r.dominance is None and r.tier is None
    payload = r.to_dict()
    assert payload["dominance"] is None and payload["models"][0]["tier"] is None


def test_marginal_intervals_are_never_wider_than_simultaneous():
    rng = np.random.default_rng(5)
    x = (rng.random((500, 8)) < np.linspace(0.7, 0.5, 8)).astype(float)
    pw = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units(), "t")
    simultaneous = rankci.certify_holm(pw, coverage="simultaneous").ranking()
    marginal = rankci.certify_holm(pw, coverage="marginal").ranking()
    assert (marginal.lower >= simultaneous.lower).all() and (
        marginal.upper <= simultaneous.upper
    ).all()


def test_json_follows_the_documented_schema(mmlu):
    r = rankci.rank(mmlu, delta=0.01)
    payload = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    for key in (
        "alpha",
        "coverage",
        "test",
        "unit",
        "delta",
        "n_units",
        "excluded",
        "models",
        "dominance",
    ):
        assert key in payload
    assert payload["delta"] == 0.01 and payload["n_units"] == r.n_units
    scores = [m["score"] for m in payload["models"]]
    assert scores == sorted(scores, reverse=True)
    assert set(payload["models"][0]) >= {
        "model",
        "score",
        "rank",
        "rank_lower",
        "rank_upper",
        "tier",
    }
    index = {m: k for k, m in enumerate(r.models)}
    pairs = r.to_dict(pairs=True)["dominance"]
    for first, second in pairs:
        assert r.dominance[index[first], index[second]]
    assert len(pairs) == r.dominance.sum() == payload["dominance"]["n_pairs"]


def test_tiers_refuse_a_cyclic_or_unclosed_relation_naming_the_models():
    cycle = np.zeros((4, 4), dtype=bool)
    cycle[0, 1] = cycle[1, 2] = cycle[2, 0] = True  # every model of the cycle has one above
    with pytest.raises(DominanceCycleError, match="cycle or is not closed") as caught:
        tiers(cycle)
    assert set(caught.value.models) == {"0", "1", "2"}
    closed_cycle = np.ones((3, 3), dtype=bool)  # a closed cycle: the diagonal is set
    with pytest.raises(DominanceCycleError):
        tiers(closed_cycle)
    # a top exists, but 1 and 2 (one model above each) dominate each other: not an order
    loop = np.zeros((3, 3), dtype=bool)
    loop[0, 1] = loop[1, 2] = loop[2, 1] = True
    loop[0, 2] = True
    with pytest.raises(DominanceCycleError) as caught:
        tiers(loop)
    assert set(caught.value.models) >= {"1", "2"}
    assert tiers(np.zeros((0, 0), dtype=bool)).tolist() == []
    assert tiers(np.zeros((3, 3), dtype=bool)).tolist() == [1, 1, 1]
