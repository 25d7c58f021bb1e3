"""The arena probes (rankci.votes.probes): each one fires on the board it is made for."""

import itertools

import numpy as np
import pytest

from rankci.votes import Votes, rank_votes
from rankci.votes.probes import cyclic_triads, probe_votes


def simulate(strength, n, *, seed, position=0.0, tie_rate=0.0, voters=None, truth=None):
    """Votes from a known truth: BT strengths (or a matrix of P(i beats j)), a position effect."""
    rng = np.random.default_rng(seed)
    m = len(strength)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    first_is_b = rng.integers(0, 2, n)
    d = np.asarray(strength)[a] - np.asarray(strength)[b] + position * np.where(first_is_b, -1, 1)
    p = 1 / (1 + np.exp(-d)) if truth is None else truth[a, b]
    out = np.where(rng.random(n) < tie_rate, 2, np.where(rng.random(n) < p, 0, 1))
    columns = {"position": first_is_b}
    if voters is not None:
        columns["voter"] = voters(rng, n)
    return Votes.from_arrays(a, b, out, models=[f"m{k}" for k in range(m)], columns=columns)


def test_cyclic_triads_equal_a_loop_over_triples():
    rng = np.random.default_rng(3)
    wins = rng.integers(0, 5, (7, 7))
    np.fill_diagonal(wins, 0)
    beats = wins > wins.T
    expected = sum(
        (beats[i, j] and beats[j, k] and beats[k, i])
        or (beats[i, k] and beats[k, j] and beats[j, i])
        for i, j, k in itertools.combinations(range(7), 3)
    )
    assert cyclic_triads(wins) == expected


def test_position_bias_is_detected_and_absent_without_it():
    s = np.linspace(0.5, -0.5, 5)
    biased = probe_votes(simulate(s, 6000, seed=1, position=0.3), rng=1)["position"]
    assert biased["flagged"] and biased["estimate"] == pytest.approx(0.3, abs=0.08)
    clean = probe_votes(simulate(s, 6000, seed=2), rng=1)["position"]
    assert not clean["flagged"] and clean["p_value"] > 0.05


def test_intransitive_truth_is_flagged_and_bt_truth_is_not():
    m = 6
    truth = np.full((m, m), 0.5)
    for i in range(m):  # each model beats the next two around a circle with probability 0.75
        for step in (1, 2):
            truth[i, (i + step) % m], truth[(i + step) % m, i] = 0.75, 0.25
    cyclic = probe_votes(simulate(np.zeros(m), 6000, seed=3, truth=truth), rng=2)["intransitivity"]
    assert cyclic["flagged"] and cyclic["statistic"] > cyclic["expected"]
    bt = probe_votes(simulate(np.linspace(1, -1, m), 6000, seed=4), rng=2)["intransitivity"]
    assert not bt["flagged"]


def test_a_power_voter_is_flagged_and_its_influence_named():
    def voters(rng, n):
        return np.where(rng.random(n) < 0.4, "power", rng.integers(0, 500, n).astype(str))

    votes = simulate(np.linspace(0.4, -0.4, 5), 8000, seed=5, voters=voters)
    ranking = rank_votes(votes, cluster="voter", seed=1)
    probe = probe_votes(votes, ranking=ranking, rng=1)["voters"]
    _, counts = np.unique(votes.columns["voter"], return_counts=True)
    share = counts / counts.sum()
    assert probe["flagged"]
    assert probe["statistic"]["largest_share"] == pytest.approx(share.max())
    assert probe["statistic"]["effective_voters"] == pytest.approx(1 / (share**2).sum())
    assert probe["influence"][0]["voter"] == "power"
    assert isinstance(probe["influence"][0]["lost"], list)


def test_votes_needed_at_this_design_separate_the_pair():
    # duplicating every vote k times scales the design: the pair must then be certified
    s = np.array([0.3, 0.25, -0.2, -0.35])
    votes = simulate(s, 3000, seed=6)
    ranking = rank_votes(votes, multiplicity="holm", covariance="model")
    needed = probe_votes(votes, ranking=ranking, rng=1)["votes_needed"]
    row = next(r for r in needed["pairs"] if r["votes_needed"])
    k = int(np.ceil(row["votes_needed"] / votes.n_votes))
    big = Votes.from_arrays(
        np.tile(votes.a, k), np.tile(votes.b, k), np.tile(votes.outcome, k), models=votes.models
    )
    bigger = rank_votes(big, multiplicity="holm", covariance="model")
    i, j = votes.models.index(row["better"]), votes.models.index(row["worse"])
    assert bigger.dominance[i, j]
    if k > 2:  # and k - 1 copies are fewer than the probe says are needed
        assert (k - 1) * votes.n_votes < row["votes_needed"]


def test_a_disconnected_or_separated_board_stops_before_the_fit():
    votes = Votes.from_arrays([0, 1, 2, 3], [1, 0, 3, 2], [0, 0, 0, 0], models=list("abcd"))
    p = probe_votes(votes)
    assert p["connectivity"]["flagged"] and p["connectivity"]["pools"] == [["a", "b"], ["c", "d"]]
    assert "position" not in p and p["fit"].startswith("not run")
    sep = Votes.from_arrays([0, 0, 1, 2], [1, 2, 2, 1], [0, 0, 0, 0], models=list("mxy"))
    assert probe_votes(sep)["separation"]["supported"]["m"] == "lower bound"
