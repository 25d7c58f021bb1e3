"""Repeated trials on the command line: --trial-col, --per-item on every command that reads
scores, the variance split in rankci scores, items x trials in rankci plan, errors in flag
words."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankci.cli import main


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for m, ability in (("a", 1.0), ("b", 0.3), ("c", -0.5)):
        for i in range(40):
            p = 1 / (1 + np.exp(-(ability + (i % 7 - 3) * 0.6)))
            for t in range(4):
                rows.append((m, f"q{i:02d}", t, int(rng.uniform() < p)))
    table = pd.DataFrame(rows, columns=["model", "question", "attempt", "correct"])
    path = tmp_path / "runs.csv"
    table.to_csv(path, index=False)
    return path, table


def enumerate_pass(outcomes, k, every):
    subsets = list(itertools.combinations(outcomes, k))
    hit = all if every else any
    return sum(hit(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("command", ["rank", "scores", "taubest", "omnibus", "plan", "report"])
def test_every_command_reads_per_item_and_trial_col(command, runs, tmp_path, capsys):
    path, _ = runs
    out = tmp_path / ("out.html" if command == "report" else "out.txt")
    args = [command, str(path), "--trial-col", "attempt", "--per-item", "pass^2", "-o", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "480 trials (4 per item, column 'attempt'; per-item score: pass^2)" in err


def test_rank_json_scores_are_the_enumerated_pass_at_k(runs, tmp_path):
    path, table = runs
    out = tmp_path / "rank.json"
    assert (
        main(
            [
                "rank",
                str(path),
                "--trial-col",
                "attempt",
                "--per-item",
                "pass@3",
                "--format",
                "json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    payload = json.loads(out.read_text())
    scores = {row["model"]: row["score"] for row in payload["models"]}
    # the result says what its scores are
    assert payload["details"]["repeated_trials"]["per_item"] == "pass@3"
    assert payload["guarantee"].endswith(
        "Each item's score is its unbiased pass@3 over its trials (4 per item), so a model's "
        "score is its mean pass@3 over the items."
    )
    for model, group in table.groupby("model"):
        per_item = [
            enumerate_pass(g["correct"].tolist(), 3, False) for _, g in group.groupby("question")
        ]
        assert scores[model] == pytest.approx(np.mean(per_item))


def test_scores_shows_the_variance_split(runs, tmp_path, capsys):
    path, table = runs
    assert main(["scores", str(path), "--trial-col", "attempt", "--no-verdict"]) == 0
    out = capsys.readouterr().out
    assert "repeated trials: variance of the per-trial scores" in out
    assert "se_rerun" in out and "flip_rate" in out
    json_out = tmp_path / "s.json"
    assert (
        main(
            ["scores", str(path), "--trial-col", "attempt", "--format", "json", "-o", str(json_out)]
        )
        == 0
    )
    split = {r["model"]: r for r in json.loads(json_out.read_text())["trial_variance"]}
    group = table[table.model == "a"]
    flips = group.groupby("question")["correct"].nunique().gt(1).mean()
    assert split["a"]["flip_rate"] == pytest.approx(flips)
    within = group.groupby("question")["correct"].var(ddof=1).mean()
    assert split["a"]["within"] == pytest.approx(within)
    assert split["a"]["se_rerun"] == pytest.approx(np.sqrt(within / 4 / 40))


def test_plan_items_x_trials_and_cheapest_split(runs, tmp_path, capsys):
    path, _ = runs
    out = tmp_path / "plan.json"
    assert (
        main(
            [
                "plan",
                str(path),
                "--trial-col",
                "attempt",
                "--items",
                "40",
                "80",
                "--trials-per-item",
                "1",
                "4",
                "--target-width",
                "0.2",
                "--max-items",
                "60",
                "--format",
                "json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    block = json.loads(out.read_text())["items_x_trials"]
    budgets = pd.DataFrame(block["budgets"])
    assert budgets[["items", "trials"]].values.tolist() == [[40, 1], [40, 4], [80, 1], [80, 4]]
    comp = pd.DataFrame(block["components"])
    z = stats.norm.ppf(0.975)
    width = 2 * z * np.sqrt((comp["between"] + comp["within"] / 4) / 80)
    assert budgets.iloc[3]["width"] == pytest.approx(width.max())
    cheapest = block["cheapest"]
    assert cheapest["feasible"] and cheapest["items"] <= 60
    assert (
        main(
            [
                "plan",
                str(path),
                "--trial-col",
                "attempt",
                "--target-width",
                "0.2",
                "--max-items",
                "60",
            ]
        )
        == 0
    )
    assert "cheapest split for width 0.2:" in capsys.readouterr().out


def test_errors_speak_in_flags(runs, tmp_path, capsys):
    path, table = runs
    assert main(["rank", str(path), "--trial-col", "attempt", "--per-item", "pass@5"]) == 2
    err = capsys.readouterr().err
    assert "--per-item 'pass@5' needs at least 5 trials per item" in err
    assert "models: 'a', 'b', 'c'" in err
    assert main(["rank", str(path), "--trial-col", "attempt", "--per-item", "best@2"]) == 2
    assert "--per-item must be mean, pass@K or pass^K" in capsys.readouterr().err
    plain = tmp_path / "plain.csv"
    table[table.attempt == 0].drop(columns="attempt").to_csv(plain, index=False)
    assert main(["rank", str(plain), "--per-item", "pass@2"]) == 2
    err = capsys.readouterr().err
    assert "--per-item 'pass@2' needs repeated trials" in err and "--trial-col" in err
    assert main(["plan", str(plain), "--trials-per-item", "1", "2"]) == 2
    assert "--trials-per-item plans repeated trials, but DATA has none" in capsys.readouterr().err
    assert main(["rank", str(path), "--trial-col", "nope"]) == 2
    assert "the trial column 'nope' is not in the table" in capsys.readouterr().err
    # trials with a gap (model a lost attempt 2 on q00): refused; --trial-gaps allow reads them
    gap = table.drop(
        table[(table.model == "a") & (table.question == "q00") & (table.attempt == 2)].index
    )
    gapped = tmp_path / "gap.csv"
    gap.to_csv(gapped, index=False)
    assert main(["rank", str(gapped), "--trial-col", "attempt"]) == 2
    err = capsys.readouterr().err
    assert "trials with gaps in column 'attempt'" in err
    assert "model 'a', item 'q00': trial '2' missing" in err and "--trial-gaps allow" in err
    assert "trial_gaps=" not in err
    assert main(["rank", str(gapped), "--trial-col", "attempt", "--trial-gaps", "allow"]) == 0
    err = capsys.readouterr().err
    assert "3-4 (unequal; a 3-4, b 4-4, c 4-4; each item scored on its own trials)" in err
    assert "trials per item differ" in err


def test_one_trial_per_item_gives_no_variance_split(runs, tmp_path, capsys):
    _, table = runs
    single = tmp_path / "single.csv"
    table[table.attempt == 1].to_csv(single, index=False)
    assert main(["scores", str(single), "--trial-col", "attempt", "--no-verdict"]) == 0
    captured = capsys.readouterr()
    assert "120 trials (1 per item, column 'attempt'" in captured.err
    assert "repeated trials: variance" not in captured.out
