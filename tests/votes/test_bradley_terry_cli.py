"""``rankci rank DATA --votes``: the vote path of the command line."""

import json

import numpy as np
import pandas as pd
import pytest

from rankci.cli import main
from rankci.votes import Votes, rank_votes


@pytest.fixture
def vote_file(tmp_path):
    rng = np.random.default_rng(0)
    m, n = 5, 3000
    s = np.linspace(0.6, -0.6, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    names = np.array(["gpt-x", "claude-y", "llama-z", "mistral-w", "qwen-v"])
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    u = rng.random(n)
    winner = np.where(
        u < 0.1,
        "tie",
        np.where(u < 0.15, "tie (bothbad)", np.where(rng.random(n) < p, "model_a", "model_b")),
    )
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": winner,
            "prompt": rng.integers(0, 600, n),
        }
    )
    self_play = pd.DataFrame(
        {"model_a": ["gpt-x"], "model_b": ["gpt-x"], "winner": ["tie"], "prompt": [1]}
    )
    path = tmp_path / "votes.csv"
    pd.concat([frame, self_play]).to_csv(path, index=False)
    return path, frame


def test_json_equals_rank_votes_on_the_same_votes(vote_file, capsys):
    path, frame = vote_file
    assert (
        main(
            [
                "rank",
                str(path),
                "--votes",
                "--multiplicity",
                "max-t",
                "--seed",
                "3",
                "--format",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    models = sorted(set(frame.model_a) | set(frame.model_b))
    code = {m: k for k, m in enumerate(models)}
    outcome = frame.winner.map({"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 3})
    votes = Votes.from_arrays(
        frame.model_a.map(code),
        frame.model_b.map(code),
        outcome,
        models=models,
        columns={"prompt": frame.prompt.to_numpy()},
    )
    ref = rank_votes(votes, seed=3).to_dict()
    assert [r["model"] for r in out["models"]] == [r["model"] for r in ref["models"]]
    for got, want in zip(out["models"], ref["models"]):
        assert got["score"] == pytest.approx(want["score"], abs=1e-12)
        assert (got["rank_lower"], got["rank_upper"], got["rank_ub"]) == (
            want["rank_lower"],
            want["rank_upper"],
            want["rank_ub"],
        )
        assert got["rating"] == pytest.approx(want["rating"])
    assert out["excluded"]["self_battles"] == 1  # read by read_votes, which counts every rule
    assert sum(out["excluded"].values()) == 1
    assert out["spec"]["cluster"] == "prompt" and out["spec"]["seed"] == 3


def test_table_shows_rank_ub_beside_the_certified_interval(vote_file, capsys):
    path, _ = vote_file
    assert main(["rank", str(path), "--votes", "--ties", "davidson", "--cluster-col", "none"]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "Rank (UB)" in text and "rank interval" in text
    assert "Bradley-Terry (davidson ties), sandwich covariance, holm" in text
    assert "Target: new votes like these" in text
    assert "votes excluded: 1 self-battle" in captured.err  # the reading summary


def test_a_vote_table_is_ranked_without_the_flag(vote_file, capsys):
    """`rankci rank votes.csv` recognises the vote table, as it recognises a wide or long table."""
    path, _ = vote_file
    assert main(["rank", str(path), "--votes", "--format", "json", "--seed", "1"]) == 0
    flagged = json.loads(capsys.readouterr().out)
    assert main(["rank", str(path), "--format", "json", "--seed", "1"]) == 0
    found = capsys.readouterr()
    assert json.loads(found.out) == flagged
    assert flagged["target"] == "new votes like these"
    assert "(battles)" in found.err  # the reading summary names the layout it recognised


def test_errors_name_the_row_and_the_flag(vote_file, tmp_path, capsys):
    path, frame = vote_file
    bad = tmp_path / "bad.csv"
    frame.assign(winner=["model_a"] * 5 + ["draw"] + ["model_b"] * (len(frame) - 6)).to_csv(
        bad, index=False
    )
    assert main(["rank", str(bad), "--votes"]) != 0
    # the 6th vote is the file's 7th line (the header is line 1)
    assert "line 7, column 'winner': unknown winner 'draw'" in capsys.readouterr().err
    assert main(["rank", str(path), "--votes", "--multiplicity", "bonferroni"]) != 0
    assert "--multiplicity bonferroni is not offered for votes" in capsys.readouterr().err
    missing = tmp_path / "scores.csv"
    frame.rename(columns={"winner": "result"}).to_csv(missing, index=False)
    assert main(["rank", str(missing), "--votes"]) != 0
    err = capsys.readouterr().err
    assert "is not a vote table in any layout rankci reads" in err
    assert "--winner-col" in err and "--layout" in err and "layout=" not in err
    assert main(["rank", str(missing), "--votes", "--winner-col", "result"]) == 0


def test_a_winner_may_name_the_model(vote_file, tmp_path, capsys):
    path, frame = vote_file
    named = frame.assign(
        winner=np.where(
            frame.winner == "model_a",
            frame.model_a,
            np.where(frame.winner == "model_b", frame.model_b, frame.winner),
        )
    )
    other = tmp_path / "named.csv"
    named.to_csv(other, index=False)
    main(["rank", str(path), "--votes", "--format", "json", "--seed", "1"])
    first = json.loads(capsys.readouterr().out)["models"]
    main(["rank", str(other), "--votes", "--format", "json", "--seed", "1"])
    second = json.loads(capsys.readouterr().out)["models"]
    assert [r["score"] for r in first[:-1]] != [] and len(first) == len(second)
    for x, y in zip(first, second):
        assert x["model"] == y["model"] and x["score"] == pytest.approx(y["score"], abs=1e-12)


def test_probes_in_the_json_and_the_table(vote_file, capsys):
    path, _ = vote_file
    assert main(["rank", str(path), "--votes", "--probes", "--format", "json", "--seed", "2"]) == 0
    probes = json.loads(capsys.readouterr().out)["probes"]
    assert {"connectivity", "separation", "position", "intransitivity", "votes_needed"} <= set(
        probes
    )
    assert all("threshold" in p and "flagged" in p for p in probes.values())
    assert main(["rank", str(path), "--votes", "--probes", "--seed", "2"]) == 0
    assert "intransitivity: ok" in capsys.readouterr().out
