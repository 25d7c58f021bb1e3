"""Repeated trials: pass@k / pass^k against brute-force enumeration of k-subsets, the trial
column read by read_scores, per-item rules, and the bad inputs (gaps, n < k, graded scores)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci import read_scores
from rankci.data import Scores
from rankci.trials import parse_per_item, pass_at_k, pass_hat_k


def brute_force(outcomes: list[int], k: int) -> tuple[float, float]:
    """pass@k and pass^k as the share of the k-subsets of the trials with any / all passes."""
    subsets = list(itertools.combinations(outcomes, k))
    some = sum(any(s) for s in subsets) / len(subsets)
    every = sum(all(s) for s in subsets) / len(subsets)
    return some, every


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_and_pass_hat_k_equal_the_k_subset_enumeration(n):
    for c in range(n + 1):
        outcomes = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            some, every = brute_force(outcomes, k)
            assert pass_at_k([n], [c], k)[0] == pytest.approx(some, abs=1e-12)
            assert pass_hat_k([n], [c], k)[0] == pytest.approx(every, abs=1e-12)


def test_estimators_are_vectorised_over_cells_of_unequal_n():
    n = np.array([3, 5, 7, 4])
    c = np.array([1, 5, 2, 0])
    expected = [brute_force([1] * ci + [0] * (ni - ci), 3) for ni, ci in zip(n, c)]
    np.testing.assert_allclose(pass_at_k(n, c, 3), [e[0] for e in expected], atol=1e-12)
    np.testing.assert_allclose(pass_hat_k(n, c, 3), [e[1] for e in expected], atol=1e-12)


def test_k_above_n_and_bad_counts_are_refused():
    with pytest.raises(ValueError, match="k=4 needs n >= k"):
        pass_at_k([3], [1], 4)
    with pytest.raises(ValueError, match="between 0 and the trials"):
        pass_hat_k([3], [4], 1)


@pytest.mark.parametrize("rule", ["pass@0", "pass@", "pass@x", "best@3", "", 3, "mean2"])
def test_per_item_rule_errors_say_what_is_allowed(rule):
    with pytest.raises(ValueError, match="per_item must be mean, pass@K or pass\\^K"):
        parse_per_item(rule)


def trial_table(seed: int = 0, n_models: int = 3, n_items: int = 12, n_trials: int = 5):
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_models):
        for i in range(n_items):
            p = rng.uniform()
            for t in range(n_trials):
                rows.append((f"m{m}", f"q{i:02d}", t, int(rng.uniform() < p)))
    return pd.DataFrame(rows, columns=["model", "item", "trial", "score"])


@pytest.mark.parametrize("rule", ["mean", "pass@1", "pass@2", "pass@5", "pass^2", "pass^5"])
def test_read_scores_makes_each_items_score_by_the_rule(rule):
    table = trial_table()
    scores = read_scores(table, per_item=rule)
    assert scores.n_rows == 3 * 12 and scores.trials is not None
    kind, k = parse_per_item(rule)
    got = scores.to_frame().set_index(["model", "item"])["score"]
    for (model, item), group in table.groupby(["model", "item"]):
        outcomes = group["score"].tolist()
        if kind == "mean":
            expected = sum(outcomes) / len(outcomes)
        else:
            some, every = brute_force(outcomes, k)
            expected = some if kind == "pass@" else every
        assert got[(model, item)] == pytest.approx(expected, abs=1e-12)
    assert scores.notes["repeated_trials"]["per_item"] == rule
    assert scores.notes["repeated_trials"]["trials_per_item"] == [5, 5]
    assert scores.notes["repeated_trials"]["unequal"] is False


# 12 items of 3 models: the subject is which trials are kept, not what the ranking certifies
@pytest.mark.filterwarnings("ignore:.* item units of continuous:rankci.RankciWarning")
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_per_item_recomputes_from_the_kept_trials_and_units_see_it():
    scores = read_scores(trial_table())
    two = scores.per_item("pass^2")
    direct = read_scores(trial_table(), per_item="pass^2")
    np.testing.assert_array_equal(two.score, direct.score)
    # the units (every test's input) are the per-item scores
    units = two.units("item")
    assert units.values.shape == (12, 3)
    np.testing.assert_allclose(np.sort(units.values.ravel()), np.sort(direct.score))
    # a ranking runs unchanged on the per-item units
    ranking = rankci.rank(two, test="t")
    assert ranking.models == ("m0", "m1", "m2")


def test_subset_keeps_the_trials_of_the_kept_cells():
    scores = read_scores(trial_table())
    sub = scores.subset(models=["m0", "m2"], items=["q00", "q01", "q02"])
    assert sorted(sub.trials.frame["model"].unique()) == ["m0", "m2"]
    assert len(sub.trials.frame) == 2 * 3 * 5
    assert sub.per_item("pass@2").n_rows == 6


def test_trial_column_found_by_alias_and_in_wide_form():
    table = trial_table().rename(columns={"trial": "epoch"})
    assert read_scores(table).notes["repeated_trials"]["column"] == "epoch"
    wide = (
        trial_table()
        .pivot_table(index=["item", "trial"], columns="model", values="score")
        .reset_index()
    )
    scores = read_scores(wide, layout="wide", per_item="pass@3")
    long = read_scores(trial_table(), per_item="pass@3")
    np.testing.assert_allclose(scores.score, long.score)
    # trial="" ignores the column: the repeats are then duplicated rows
    with pytest.raises(ValueError, match="duplicated score"):
        read_scores(table, trial="")


def test_trials_with_prompt_variants_are_nested_in_the_variant(tmp_path):
    table = trial_table(n_trials=3)
    table = pd.concat([table.assign(prompt="p1"), table.assign(prompt="p2")])
    scores = read_scores(table, per_item="pass@3")
    assert scores.prompts == ("p1", "p2") and scores.n_rows == 2 * 3 * 12
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    np.testing.assert_array_equal(read_scores(path, per_item="pass@3").score, scores.score)


# ------------------------------------------------------------------ bad input
def test_trials_with_gaps_are_refused_naming_model_item_and_missing_trials():
    table = trial_table(n_models=2, n_items=4, n_trials=4)
    # model m1, item q01 lost trial 2: trials 0, 1, 3 (a gap)
    gap = (table["model"] == "m1") & (table["item"] == "q01") & (table["trial"] == 2)
    with pytest.raises(ValueError) as error:
        read_scores(table[~gap], per_item="pass@3")
    message = str(error.value)
    assert "trials with gaps in column 'trial'" in message
    assert "model 'm1', item 'q01': trial '2' missing" in message
    assert "trial_gaps='allow'" in message
    # a lost first trial is a gap too (ids 1, 2, 3 while others hold 0)
    first = (table["model"] == "m0") & (table["item"] == "q03") & (table["trial"] == 0)
    with pytest.raises(ValueError, match="model 'm0', item 'q03': trial '0' missing"):
        read_scores(table[~first])


def test_trials_with_gaps_allowed_are_unequal_counts_reported_and_warned():
    table = trial_table(n_models=2, n_items=4, n_trials=4)
    gap = (table["model"] == "m1") & (table["item"] == "q01") & (table["trial"] == 2)
    with pytest.warns(
        rankci.RankciWarning, match="trials per item differ.*m1 3-4.*1 cells have gaps"
    ):
        scores = read_scores(table[~gap], per_item="pass@3", trial_gaps="allow")
    record = scores.notes["repeated_trials"]
    assert record["unequal"] is True
    assert record["trials_by_model"] == {"m0": [4, 4], "m1": [3, 4]}
    assert record["cells_with_fewer_trials"] == 1
    assert record["examples"] == [{"model": "m1", "item": "q01", "trials": 3}]
    assert record["gaps"] == {
        "cells": 1,
        "examples": [{"model": "m1", "item": "q01", "missing": ["2"]}],
    }
    # the gapped cell is scored on its own three trials
    outcomes = table[~gap & (table["model"] == "m1") & (table["item"] == "q01")]["score"]
    got = scores.to_frame().set_index(["model", "item"])["score"][("m1", "q01")]
    assert got == pytest.approx(brute_force(outcomes.tolist(), 3)[0])
    # re-scoring keeps the rule the trials were read with (no refusal on per_item)
    again = scores.per_item("pass^2")
    assert again.notes["repeated_trials"]["gaps"]["cells"] == 1
    with pytest.raises(ValueError, match="trial_gaps must be 'refuse' or 'allow'"):
        read_scores(table, trial_gaps="ignore")


def test_fewer_trials_without_gaps_are_unequal_counts_not_gaps():
    """A model run fewer times (ids 0..2 beside 0..3), or an item run fewer times for every
    model, holds the first ids: handled as unequal counts, warned, never refused."""
    table = trial_table(n_models=2, n_items=4, n_trials=4)
    short_model = (table["model"] == "m1") & (table["trial"] == 3)
    short_item = (table["item"] == "q02") & (table["trial"] >= 2)
    with pytest.warns(rankci.RankciWarning, match="trials per item differ"):
        scores = read_scores(table[~(short_model | short_item)])
    record = scores.notes["repeated_trials"]
    assert "gaps" not in record and record["trials_per_item"] == [2, 4]
    cell = table[(table["model"] == "m0") & (table["item"] == "q02") & (table["trial"] < 2)]
    got = scores.to_frame().set_index(["model", "item"])["score"][("m0", "q02")]
    assert got == pytest.approx(cell["score"].mean())


def test_gap_detection_orders_ids_as_numbers_and_finds_every_missing_id():
    from rankci.trials import trial_gaps

    # ids "2" and "10": numeric order (text order would put "10" before "2")
    labels = pd.DataFrame(
        {"model": ["a"] * 3 + ["b"] * 2, "item": ["x"] * 5, "trial": ["1", "2", "10", "1", "10"]}
    )
    found = trial_gaps(labels, ["model", "item"])
    assert found.to_dict("records") == [{"model": "b", "item": "x", "missing": ["2"]}]
    # brute force over random tables: a gap is an id below the cell's last id that it lacks
    rng = np.random.default_rng(5)
    for _ in range(30):
        rows = [(m, i, t) for m in "ab" for i in "xyz" for t in range(5) if rng.random() < 0.7]
        labels = pd.DataFrame(rows, columns=["model", "item", "trial"]).astype({"trial": str})
        universe = sorted({int(t) for t in labels["trial"]})
        expected = {}
        for (m, i), cell in labels.groupby(["model", "item"]):
            have = {int(t) for t in cell["trial"]}
            lost = [str(t) for t in universe if t < max(have) and t not in have]
            if lost:
                expected[(m, i)] = lost
        got = {
            (r["model"], r["item"]): r["missing"]
            for r in trial_gaps(labels, ["model", "item"]).to_dict("records")
        }
        assert got == expected


def test_pass_at_k_with_fewer_trials_than_k_names_the_items_and_models():
    table = trial_table(n_models=2, n_items=4, n_trials=4)
    drop = (table["model"] == "m0") & table["item"].isin(["q02", "q03"]) & (table["trial"] > 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        with pytest.raises(ValueError) as error:
            read_scores(table[~drop], per_item="pass@3")
    message = str(error.value)
    assert "needs at least 3 trials per item" in message
    assert "'q02' (m0: 2)" in message and "'q03' (m0: 2)" in message
    assert "models: 'm0'" in message


def test_pass_at_k_refuses_graded_scores_naming_the_column():
    table = trial_table().rename(columns={"score": "acc"}).astype({"acc": float})
    table.loc[7, "acc"] = 0.5
    expected = "needs 0/1 scores, but score column 'acc' is 0.5 at row 7"
    with pytest.raises(ValueError, match=expected):
        read_scores(table, per_item="pass^2")
    assert read_scores(table).score.max() <= 1  # the mean takes graded scores


def test_duplicated_trial_and_missing_trial_column():
    table = trial_table(n_models=2, n_items=3, n_trials=2)
    twice = pd.concat([table, table.iloc[[0]]])
    expected = "duplicated score for \\(model 'm0', item 'q00', trial '0'\\)"
    with pytest.raises(ValueError, match=expected):
        read_scores(twice)
    with pytest.raises(ValueError, match="the trial column 'run' is not in the table"):
        read_scores(table, trial="run")
    plain = table[table["trial"] == 0].drop(columns="trial")
    with pytest.raises(ValueError, match="per_item='pass@2' needs repeated trials.*trial=..."):
        read_scores(plain, per_item="pass@2")
    with pytest.raises(ValueError, match="needs repeated trials"):
        read_scores(plain).per_item("pass^2")
    assert read_scores(plain).per_item("mean").n_rows == plain.shape[0]


def test_from_frame_trial_blank_label():
    table = trial_table(n_models=2, n_items=3, n_trials=2).astype({"trial": object})
    table.loc[3, "trial"] = " "
    with pytest.raises(ValueError, match="column 'trial' is blank at row 3"):
        Scores.from_frame(table, trial="trial")
