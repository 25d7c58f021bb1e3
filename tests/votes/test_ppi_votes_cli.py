"""``rankci votes FILE --judge COL --human COL``: the PPI board on the command line."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from rankci._base import RankciWarning
from rankci.cli import main
from rankci.votes import Votes, rank_votes

NAMES = np.array(["model_a", "model_b", "tie", "tie (bothbad)"], dtype=object)
MODELS = np.array(["alpha", "beta", "gamma", "delta"])


def write_arena(path, n=2500, n_lab=400, seed=2, judge_noise=0.3, bias=True):
    """Human verdicts from a Bradley-Terry truth; the judge copies them 1 - judge_noise of the
    time and otherwise votes for delta (bias=False: a coin)."""
    rng = np.random.default_rng(seed)
    s = np.array([0.6, 0.2, -0.2, -0.6])
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    human = np.where(rng.random(n) < 1 / (1 + np.exp(s[b] - s[a])), 0, 1)
    favour = np.where(a == 3, 0, np.where(b == 3, 1, rng.integers(0, 2, n)))
    if not bias:
        favour = rng.integers(0, 2, n)
    judge = np.where(rng.random(n) < 1 - judge_noise, human, favour)
    lab = np.zeros(n, bool)
    lab[rng.choice(n, n_lab, replace=False)] = True
    frame = pd.DataFrame(
        {
            "model_a": MODELS[a],
            "model_b": MODELS[b],
            "verdict": NAMES[judge],
            "human_verdict": np.where(lab, NAMES[human], ""),
            "p_label": np.full(n, n_lab / n),
        }
    )
    frame.to_csv(path, index=False)
    return frame


def expected(frame, **kwargs):
    code = {m: k for k, m in enumerate(sorted(set(frame.model_a) | set(frame.model_b)))}
    votes = Votes.from_arrays(
        frame.model_a.map(code),
        frame.model_b.map(code),
        frame.verdict.map({v: k for k, v in enumerate(NAMES)}),
        models=sorted(code),
        columns={"human": frame.human_verdict.fillna("").to_numpy(dtype=object)},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        return rank_votes(votes, human="human", **kwargs)


def test_json_equals_rank_votes_with_human(tmp_path, capsys):
    path = tmp_path / "arena.csv"
    frame = write_arena(path)
    argv = ["votes", str(path), "--judge", "verdict", "--human", "human_verdict", "--seed", "4"]
    assert main([*argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = expected(frame, seed=4)
    got = {r["model"]: r for r in out["models"]}
    for k, model in enumerate(ref.models):
        assert got[model]["rank_lower"] == ref.lower[k] and got[model]["rank_upper"] == ref.upper[k]
    assert out["spec"]["human"] == "human_verdict" and out["spec"]["lam"] == "auto"
    fits = {r["model"]: r for r in out["details"]["ppi"]["fits"]}
    ref_fits = {r["model"]: r for r in ref.details["ppi"]["fits"]}
    for model, row in fits.items():
        assert row["ppi"] == pytest.approx(ref_fits[model]["ppi"], abs=1e-10)
        assert row["judge_rank"] == ref_fits[model]["judge_rank"]


def test_text_shows_three_fits_and_effective_labels(tmp_path, capsys):
    path = tmp_path / "arena.csv"
    write_arena(path)
    argv = ["votes", str(path), "--judge", "verdict", "--human", "human_verdict", "--lam", "0.5"]
    assert main([*argv, "--inclusion-col", "p_label", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "three fits side by side" in text
    for column in ("judge_rank", "human_rank", "ppi_rank", "effective_labels"):
        assert column in text
    assert "lam = 0.500 (fixed)" in text and "(stratified labelling)" in text
    assert "effective human labels: PPI is worth" in text


def test_few_labels_and_a_weak_judge_warn_on_stderr(tmp_path, capsys):
    path = tmp_path / "arena.csv"
    write_arena(path, n_lab=80, judge_noise=1.0, bias=False)
    argv = ["votes", str(path), "--judge", "verdict", "--human", "human_verdict", "--seed", "1"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "rankci: warning: fewer than 50 labelled battles" in captured.err
    assert "PPI gains nothing over human-only" in captured.err
    assert "warning: fewer than 50" in captured.out


def test_bad_human_verdicts_and_lam_are_errors_in_flag_words(tmp_path, capsys):
    path = tmp_path / "arena.csv"
    frame = write_arena(path)
    k = int(np.flatnonzero(frame.human_verdict.to_numpy() != "")[0])
    frame.loc[k, "human_verdict"] = "both"
    frame.to_csv(path, index=False)
    argv = ["votes", str(path), "--judge", "verdict", "--human", "human_verdict"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"the --human column 'human_verdict', vote {k}: 'both' is not a verdict" in err
    assert main([*argv, "--lam", "2"]) == 2
    assert "--lam must be 'auto' or a number in [0, 1]" in capsys.readouterr().err
    assert main(["votes", str(path), "--judge", "verdict", "--human", "nope"]) == 2
    assert "'nope' is not in" in capsys.readouterr().err


def test_the_docs_example_runs_and_prints_what_the_docs_say(capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "arena.md").read_text()
    section = text[text.index("## A judge's votes corrected by human votes (PPI)") :]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        exec(compile(block, "docs/arena.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "[1, 2, 3] [1, 2, 3]"
    said = re.search(r"^# (\[\('x'.*?\]\)\])", block, re.M).group(1)
    assert printed[1] == said
