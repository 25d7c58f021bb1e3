"""The arena monitor (rankci.votes.sequential): oracle, validity, ranking, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankci.cli import main
from rankci.sequential.spec import MonitorSpec
from rankci.votes.sequential import ArenaMonitor, replay_votes
from rankci.votes.table import Votes


def _stream(rng, n, m, beta, tie=0.1, weights=None):
    """n votes from a BT truth with ties (the pair drawn with probabilities ``weights``)."""
    pairs = np.array([(j, l) for j in range(m) for l in range(m) if j < l])
    w = np.ones(len(pairs)) if weights is None else np.asarray(weights, float)
    pick = pairs[rng.choice(len(pairs), size=n, p=w / w.sum())]
    swap = rng.random(n) < 0.5
    a = np.where(swap, pick[:, 1], pick[:, 0])
    b = np.where(swap, pick[:, 0], pick[:, 1])
    p = 1 / (1 + np.exp(-(beta[a] - beta[b])))
    u = rng.random(n)
    out = np.where(u < tie, 2, np.where(rng.random(n) < p, 0, 1))
    return a, b, out


def _oracle(a, b, out, m, bet, grid=(0.03, 0.06, 0.12, 0.25, 0.5), lam=0.25):
    """A direct loop over the votes: the wealth of every ordered pair, in time order."""
    lams = list(grid) if bet == "mixture" else [lam]
    comps = [[[0.0] * m for _ in range(m)] for _ in lams]
    log_a = [[0.0] * m for _ in range(m)]
    s1 = [[0.0] * m for _ in range(m)]
    s2 = [[0.0] * m for _ in range(m)]
    for t in range(len(a)):
        x = 1.0 if out[t] == 0 else 0.0 if out[t] == 1 else 0.5
        for j, l, xx in ((a[t], b[t], x), (b[t], a[t], 1.0 - x)):
            y = 2.0 * (xx - 0.5)
            if bet == "agrapa":
                lam_t = min(max(s1[j][l] / (1.0 + s2[j][l]), 0.0), 0.75)
                log_a[j][l] += float(np.log(1.0 + lam_t * y))
                s1[j][l] += y
                s2[j][l] += y * y
            else:
                for k, lk in enumerate(lams):
                    comps[k][j][l] += float(np.log(1.0 + lk * y))
    if bet == "agrapa":
        out_ = np.array(log_a)
    else:
        c = np.array(comps)
        out_ = np.log(np.exp(c).mean(axis=0))
    np.fill_diagonal(out_, np.nan)
    return out_


@pytest.mark.parametrize("bet", ["mixture", "agrapa", "fixed"])
def test_wealth_equals_a_direct_loop_over_votes_in_chunks(bet):
    rng = np.random.default_rng(3)
    m = 4
    a, b, out = _stream(rng, 700, m, np.array([0.6, 0.2, -0.1, -0.7]), weights=[5, 1, 1, 1, 1, 3])
    models = ["w", "x", "y", "z"]
    mon = ArenaMonitor(models, MonitorSpec(sampling="iid", bet=bet))
    for lo, hi in ((0, 1), (1, 57), (57, 58), (58, 400), (400, 700)):  # uneven chunks
        mon.update(Votes.from_arrays(a[lo:hi], b[lo:hi], out[lo:hi], models=models))
    want = _oracle(a, b, out, m, bet)
    np.testing.assert_allclose(mon.log_wealth(), want, rtol=0, atol=1e-12)


def test_timestamp_orders_the_votes_within_a_chunk():
    rng = np.random.default_rng(5)
    a, b, out = _stream(rng, 300, 3, np.array([0.5, 0.0, -0.5]))
    models = ["x", "y", "z"]
    perm = rng.permutation(300)  # rows shuffled, the timestamp gives the order back
    shuffled = Votes.from_arrays(
        a[perm], b[perm], out[perm], models=models, columns={"timestamp": perm.astype(float)}
    )
    mon = ArenaMonitor(models, MonitorSpec(sampling="iid", bet="agrapa"))
    mon.update(shuffled)
    np.testing.assert_allclose(mon.log_wealth(), _oracle(a, b, out, 3, "agrapa"), atol=1e-12)


def test_the_chunk_names_models_by_name():
    mon = ArenaMonitor(["x", "y", "z"], MonitorSpec(sampling="iid", bet="fixed", lam=0.5))
    # codes of the chunk ("z", "x"): code 0 is z, so these are 3 wins of z over x
    mon.update(Votes.from_arrays([0, 0, 0], [1, 1, 1], [0, 0, 0], models=["z", "x"]))
    assert mon.log_wealth()[2, 0] == pytest.approx(3 * np.log(1.5), abs=1e-12)
    assert mon.log_wealth()[0, 2] == pytest.approx(3 * np.log(0.5), abs=1e-12)
    with pytest.raises(ValueError, match="'q', which is not one of the monitor's models"):
        mon.update(Votes.from_arrays([0], [1], [0], models=["x", "q"]))


def test_ville_no_false_dominance_at_any_look_under_the_null():
    """All models equal (every pair is a null both ways), adaptive lopsided sampling, looks after
    every batch: the share of runs with any certified pair at any look is <= alpha."""
    alpha, runs, m = 0.2, 150, 4
    models = list("abcd")
    hits = 0
    for r in range(runs):
        rng = np.random.default_rng(100 + r)
        mon = ArenaMonitor(models, MonitorSpec(sampling="iid", alpha=alpha, bet="agrapa"))
        weights = np.ones(6)
        for _ in range(30):
            a, b, out = _stream(rng, 40, m, np.zeros(m), tie=0.2, weights=weights)
            mon.update(Votes.from_arrays(a, b, out, models=models))
            mon.look()
            # adaptive: sample more of the pair whose wealth is largest (predictable)
            w = np.nan_to_num(mon.log_wealth(), nan=-np.inf)
            top = np.unravel_index(np.argmax(w), w.shape)
            pairs = [(j, l) for j in range(m) for l in range(m) if j < l]
            weights = np.ones(6)
            weights[pairs.index(tuple(sorted(top)))] = 10.0
        hits += mon.looks()[-1]["n_certified"] > 0
    rate = hits / runs
    se = np.sqrt(alpha * (1 - alpha) / runs)
    assert rate <= alpha + 2 * se, (rate, se)


def test_ranking_from_certified_pairs():
    rng = np.random.default_rng(7)
    models = ["p", "q", "r"]
    a, b, out = _stream(rng, 4000, 3, np.array([1.5, 0.0, -1.5]))
    mon = replay_votes(Votes.from_arrays(a, b, out, models=models), look_every=500)
    assert [look["t"] for look in mon.looks()] == list(range(500, 4001, 500))
    cert = mon.certified()
    assert cert[0, 1] and cert[1, 2] and cert[0, 2] and not cert[1, 0]
    ranking = mon.ranking()
    assert ranking.lower.tolist() == [1, 2, 3] and ranking.upper.tolist() == [1, 2, 3]
    assert "head-to-head" in ranking.guarantee


def test_a_certified_cycle_is_reported_not_ranked():
    models = ["x", "y", "z"]
    # x beats y, y beats z, z beats x, 40 times each: an intransitive truth
    a = np.repeat([0, 1, 2], 40)
    b = np.repeat([1, 2, 0], 40)
    mon = ArenaMonitor(models, MonitorSpec(sampling="iid", bet="fixed", lam=0.5))
    mon.update(Votes.from_arrays(a, b, np.zeros(120, dtype=int), models=models))
    mon.look()
    assert mon.certified()[0, 1] and mon.certified()[1, 2] and mon.certified()[2, 0]
    with pytest.raises(ValueError, match="not transitive"):
        mon.ranking()


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="sampling='iid'"):
        ArenaMonitor(["x", "y"], MonitorSpec(sampling="finite", n_items=10))
    with pytest.raises(ValueError, match="bet='ons'"):
        ArenaMonitor(["x", "y"], MonitorSpec(sampling="iid", bet="ons"))
    with pytest.raises(ValueError, match="certifier='shortcut'"):
        ArenaMonitor(["x", "y"], MonitorSpec(sampling="iid", certifier="shortcut"))


def test_cli_monitor_reads_a_vote_table(tmp_path, capsys):
    rng = np.random.default_rng(11)
    a, b, out = _stream(rng, 2000, 3, np.array([1.2, 0.0, -1.2]))
    names = ["m0", "m1", "m2"]
    winners = np.array(["model_a", "model_b", "tie"])
    path = tmp_path / "votes.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"model_a": names[i], "model_b": names[j], "winner": str(winners[o])})
            for i, j, o in zip(a, b, out)
        )
    )
    assert main(["monitor", str(path), "--format", "json", "--look-every", "250"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["unit"] == "vote" and payload["n_votes"] == 2000
    assert "P(j wins) + P(tie)/2" in payload["target"]
    assert "every look simultaneously" in payload["guarantee"]
    assert [look["t"] for look in payload["looks"]] == list(range(250, 2001, 250))
    mon = replay_votes(Votes.from_arrays(a, b, out, models=names), look_every=250)
    assert payload["looks"] == mon.looks()
    assert main(["monitor", str(path)]) == 0
    text = capsys.readouterr().out
    assert "head-to-head" in text and "rank interval" in text


def test_cli_says_why_nothing_is_certified(tmp_path, capsys):
    path = tmp_path / "few.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\nx,y,model_b\ny,z,tie\nx,x,tie\n")
    assert main(["monitor", str(path)]) == 0
    text = capsys.readouterr().out
    assert "nothing certified: no pair's wealth reached M(M-1)/alpha = 120" in text
    assert main(["monitor", str(path), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["certified"] == [] and payload["threshold"] == pytest.approx(120.0)
    assert payload["excluded"].get("self_battles") == 1
