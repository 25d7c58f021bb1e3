"""Reading votes (rankci.votes.read_votes): each layout's hand-written fixture, vote by vote.

The expected votes are read off the fixture files by hand (tests/fixtures/votes/README.md says
what each file holds), never produced by the reader.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankci._base import RankciWarning
from rankci.votes import read_votes
from rankci.votes.read import EXCLUSIONS, reading_summary, vote_tally
from rankci.votes.table import A_WINS, B_WINS, TIE, TIE_BOTHBAD

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "votes"
A, B, T, BB = A_WINS, B_WINS, TIE, TIE_BOTHBAD
ALPHA, BETA, GAMMA = "alpha-7b", "Beta-Chat v2", "gamma_13B"


def triples(votes) -> list[tuple[str, str, int]]:
    """(model_a, model_b, outcome) of every vote, by name."""
    m = votes.models
    return [(m[i], m[j], int(o)) for i, j, o in zip(votes.a, votes.b, votes.outcome)]


def no_exclusions(**counts) -> dict:
    return {**dict.fromkeys(EXCLUSIONS, 0), **counts}


# ── LMArena battles ───────────────────────────────────────────────────────────────────────


def test_lmarena_battles_vote_by_vote_with_style_columns():
    votes = read_votes(FIXTURES / "lmarena_battles.json")
    assert votes.source["layout"] == "lmarena"
    assert triples(votes) == [
        (ALPHA, BETA, A),
        (BETA, GAMMA, B),
        (GAMMA, ALPHA, T),
        (ALPHA, GAMMA, BB),
        (BETA, ALPHA, B),
        (GAMMA, BETA, A),  # q-0006, alpha-7b against itself, is left out
    ]
    assert votes.excluded == no_exclusions(self_battles=1)
    c = votes.columns
    assert c["prompt"].tolist() == ["q-0001", "q-0002", "q-0003", "q-0004", "q-0005", "q-0007"]
    assert c["voter"].tolist()[:3] == ["arena_user_101", "arena_user_102", "arena_user_101"]
    assert c["language"].tolist()[2] == "German"
    assert c["timestamp"].tolist()[0] == 1717000001.25
    # conv_metadata: tokens as they are; headers h1..h6, lists (ordered + unordered) and bold
    # (** and __) summed, as LMArena's style control sums them
    assert c["style_tokens_a"].tolist() == [412, 88, 150, 60, 500, 333]
    assert c["style_tokens_b"].tolist() == [230, 301, 149, 75, 640, 111]
    assert c["style_headers_a"].tolist() == [3, 0, 0, 0, 3, 3]
    assert c["style_headers_b"].tolist() == [0, 1, 0, 0, 5, 0]
    assert c["style_lists_a"].tolist() == [3, 0, 0, 0, 5, 4]
    assert c["style_lists_b"].tolist() == [5, 4, 0, 0, 7, 0]
    assert c["style_bold_a"].tolist() == [4, 0, 1, 0, 2, 2]
    assert c["style_bold_b"].tolist() == [1, 3, 1, 0, 7, 0]
    assert votes.source["style_missing"] == 0


def test_battles_without_conv_metadata_entries_keep_empty_style_cells_and_count_them():
    battles = json.loads((FIXTURES / "lmarena_battles.json").read_text())
    battles[0]["conv_metadata"] = None
    votes = read_votes(pd.DataFrame(battles, dtype=object))
    assert votes.n_votes == 6  # no vote is lost for lack of style information
    assert np.isnan(votes.columns["style_tokens_a"][0])
    assert votes.source["style_missing"] == 1
    assert "1 votes without conv_metadata" in reading_summary(votes)


# ── Arena-Hard ─────────────────────────────────────────────────────────────────────────────


def test_arena_hard_two_games_two_votes_strong_verdicts_three_positions_recorded():
    votes = read_votes(FIXTURES / "arena_hard_judgments.jsonl", baseline="gpt-4-0314")
    base = "gpt-4-0314"
    assert votes.source["layout"] == "arena-hard"
    assert triples(votes) == [
        (base, ALPHA, A),  # game 1: A>B, the baseline is Assistant A
        (base, ALPHA, T),  # game 2: A=B
        (base, ALPHA, A),  # game 1: A>>B, three votes
        (base, ALPHA, A),
        (base, ALPHA, A),
        (base, ALPHA, A),  # game 2: B>A, and B is the baseline in the swapped game
        (base, BETA, B),  # game 1: B>>A, three votes
        (base, BETA, B),
        (base, BETA, B),  # game 2 has no verdict (score null)
        (base, BETA, T),  # game 1: A=B
        (base, BETA, B),  # game 2: A>B, and A is the judged model in the swapped game
    ]
    assert votes.columns["position"].tolist() == [1, 2, 1, 1, 1, 2, 1, 1, 1, 1, 2]
    assert votes.excluded == no_exclusions(no_verdict=1)
    assert votes.source["strong_verdicts"] == 2 and votes.source["games"] == 8
    assert votes.columns["voter"].tolist() == ["gpt-4-1106-preview"] * 11
    assert votes.columns["prompt"][0] == "328c149ed45a41c0b9d6f14659e63599"


def test_arena_hard_strong_votes_one_counts_a_strong_verdict_once():
    votes = read_votes(
        FIXTURES / "arena_hard_judgments.jsonl", baseline="gpt-4-0314", strong_votes=1
    )
    assert votes.n_votes == 7
    tally = vote_tally(votes).set_index("model")
    assert tally.loc[ALPHA].tolist() == [4, 0, 3, 1]
    assert tally.loc[BETA].tolist() == [3, 2, 0, 1]


def test_arena_hard_baseline_field_of_the_judgments_is_used():
    frame = pd.read_json(FIXTURES / "arena_hard_judgments.jsonl", lines=True, dtype=False)
    frame["baseline"] = "o3-mini-2025-01-31"
    votes = read_votes(frame)
    assert "o3-mini-2025-01-31" in votes.models and votes.n_votes == 11
    with pytest.raises(ValueError, match=r"row 0: the judgment's baseline is 'o3-mini-2025-01-31'"):
        read_votes(frame, baseline="gpt-4-0314")


# ── MT-Bench ───────────────────────────────────────────────────────────────────────────────


def test_mt_bench_one_vote_per_judgment_as_fastchat_counts_it():
    votes = read_votes(FIXTURES / "mt_bench_pair.jsonl")
    assert votes.source["layout"] == "mt-bench"
    assert triples(votes) == [
        (ALPHA, BETA, A),  # both games: model_1
        (ALPHA, GAMMA, T),  # the games disagree: a tie
        (BETA, GAMMA, B),  # both games: model_2
        (ALPHA, GAMMA, T),  # both games: tie
        # the fifth judgment has g1_winner "error": no vote
        (BETA, ALPHA, T),  # model_2 in one game, tie in the other: a tie
    ]
    assert votes.excluded == no_exclusions(no_verdict=1)
    assert votes.source["inconsistent_games"] == 2
    assert votes.columns["turn"].tolist() == [1, 1, 1, 1, 2]
    assert votes.columns["voter"].tolist() == ["gpt-4/pair-v2"] * 4 + ["gpt-4/pair-v2-multi-turn"]
    assert votes.columns["prompt"].tolist() == ["81", "81", "82", "82", "82"]


def test_mt_bench_games_two_gives_each_game_its_vote_and_position():
    votes = read_votes(FIXTURES / "mt_bench_pair.jsonl", games="two")
    assert triples(votes) == [
        (ALPHA, BETA, A),  # judgment 1, game 1: model_1
        (ALPHA, BETA, A),  # game 2: model_1
        (ALPHA, GAMMA, A),  # judgment 2: model_1, then model_2
        (ALPHA, GAMMA, B),
        (BETA, GAMMA, B),  # judgment 3: model_2 twice
        (BETA, GAMMA, B),
        (ALPHA, GAMMA, T),  # judgment 4: tie twice
        (ALPHA, GAMMA, T),
        (ALPHA, BETA, B),  # judgment 5: game 1 is "error" (no vote), game 2 model_2
        (BETA, ALPHA, B),  # judgment 6: model_2, then tie
        (BETA, ALPHA, T),
    ]
    assert votes.columns["position"].tolist() == [1, 2, 1, 2, 1, 2, 1, 2, 2, 1, 2]
    assert votes.excluded == no_exclusions(no_verdict=1)
    assert votes.columns["turn"].tolist() == [1] * 8 + [2] * 3


# ── AlpacaEval ─────────────────────────────────────────────────────────────────────────────


def test_alpaca_eval_preferences_rounded_as_its_discrete_win_rate_and_kept_soft():
    votes = read_votes(FIXTURES / "alpaca_eval_annotations.json")
    ref = "gpt4_1106_preview"
    assert votes.source["layout"] == "alpaca-eval"
    assert triples(votes) == [
        (ref, ALPHA, A),  # 1.0000073
        (ref, ALPHA, B),  # 1.9241
        (ref, ALPHA, T),  # 1.5
        (ref, BETA, B),  # 2.0
        (ref, BETA, A),  # 1.2; the last annotation has preference null: no vote
    ]
    assert votes.excluded == no_exclusions(no_verdict=1)
    assert votes.source["fractional_preferences"] == 3
    np.testing.assert_allclose(
        votes.columns["preference_b"], [0.0000073, 0.9241, 0.5, 1.0, 0.2], rtol=0, atol=1e-12
    )
    assert votes.columns["category"].tolist() == ["helpful_base"] * 2 + [
        "koala",
        "helpful_base",
        "koala",
    ]
    assert votes.columns["voter"][0] == "weighted_alpaca_eval_gpt4_turbo"


def test_alpaca_eval_legacy_zero_is_a_tie():
    frame = pd.DataFrame(
        {"generator_1": ["r", "r"], "generator_2": ["m", "m"], "preference": [0, 2]}
    )
    votes = read_votes(frame)
    assert votes.outcome.tolist() == [T, B]
    assert votes.columns["preference_b"].tolist() == [0.5, 1.0]


# ── generic battles tables, the spellings, the round trip ──────────────────────────────────


BATTLES = [
    (ALPHA, BETA, A),  # model_a
    (BETA, GAMMA, B),  # the winner named: gamma_13B
    (GAMMA, ALPHA, T),  # Tie
    (ALPHA, GAMMA, BB),  # tie_bothbad
    # alpha-7b against itself is left out
    (BETA, ALPHA, B),  # " model_b " (spaces around)
    ("007", ALPHA, A),  # the winner named: 007, kept as text
]


def test_battles_csv_spellings_names_as_written_and_optional_columns():
    votes = read_votes(FIXTURES / "battles.csv", covariates=["length_diff"])
    assert votes.source["layout"] == "battles"
    assert triples(votes) == BATTLES
    assert votes.models == ("007", BETA, ALPHA, GAMMA)
    assert votes.excluded == no_exclusions(self_battles=1)
    assert votes.columns["length_diff"].tolist() == [0.25, -0.5, 0.0, 1.5, -2.0, 0.1]
    assert votes.columns["prompt"].tolist() == ["p1", "p1", "p2", "p2", "p3", "p4"]
    assert votes.columns["category"].tolist()[:3] == ["coding", "coding", "writing"]
    assert votes.columns["turn"].tolist() == [1, 1, 2, 1, 1, 1]
    assert votes.source["columns"]["prompt"] == "question_id"


@pytest.mark.parametrize("suffix", [".tsv", ".parquet", ".jsonl", ".json", "frame"])
def test_the_same_battles_in_every_format_give_the_same_votes(tmp_path, suffix):
    table = pd.read_csv(FIXTURES / "battles.csv", dtype=str, keep_default_na=False)
    table["length_diff"] = table["length_diff"].astype(float)
    path = tmp_path / f"votes{suffix}"
    if suffix == ".tsv":
        table.to_csv(path, sep="\t", index=False)
    elif suffix == ".parquet":
        table.to_parquet(path, index=False)
    elif suffix == ".jsonl":
        table.to_json(path, orient="records", lines=True)
    elif suffix == ".json":
        table.to_json(path, orient="records")
    source = table if suffix == "frame" else path
    votes = read_votes(source, covariates=["length_diff"])
    reference = read_votes(FIXTURES / "battles.csv", covariates=["length_diff"])
    assert triples(votes) == triples(reference) == BATTLES
    assert votes.excluded == reference.excluded
    assert sorted(votes.columns) == sorted(reference.columns)
    for key in reference.columns:
        assert votes.columns[key].tolist() == reference.columns[key].tolist(), key


def test_named_columns_of_a_battles_table():
    frame = pd.DataFrame(
        {
            "left": ["x", "y"],
            "right": ["y", "z"],
            "verdict": ["model_b", "tie (bothbad)"],
            "conversation": ["c1", "c2"],
        }
    )
    votes = read_votes(
        frame, model_a="left", model_b="right", winner="verdict", prompt="conversation"
    )
    assert triples(votes) == [("x", "y", B), ("y", "z", BB)]
    assert votes.columns["prompt"].tolist() == ["c1", "c2"]
    assert (
        "prompt"
        not in read_votes(
            frame, model_a="left", model_b="right", winner="verdict", prompt=""
        ).columns
    )


@pytest.mark.parametrize(
    "spelling, code",
    [
        ("MODEL_A", A),
        ("model_b", B),
        (" tie ", T),
        ("Tie (BothBad)", BB),
        ("tie(bothbad)", BB),
        ("tie_bothbad", BB),
        ("both_bad", BB),
    ],
)
def test_tolerated_winner_spellings(spelling, code):
    votes = read_votes(battles_frame([spelling, "model_a"]))
    assert votes.outcome.tolist() == [code, A]


@pytest.mark.parametrize("spelling", ["a", "left", "model-a", "draw", "bothbad", "1"])
def test_nothing_else_is_guessed(spelling):
    with pytest.raises(ValueError, match=f"unknown winner {spelling!r}"):
        read_votes(battles_frame([spelling, "model_a"]))


def battles_frame(winners) -> pd.DataFrame:
    return pd.DataFrame(
        {"model_a": ["x"] * len(winners), "model_b": ["y"] * len(winners), "winner": winners}
    )


def test_lmarena_battles_through_parquet_keep_their_style_columns(tmp_path):
    battles = json.loads((FIXTURES / "lmarena_battles.json").read_text())
    path = tmp_path / "battles.parquet"
    pd.DataFrame(battles).drop(columns=["category_tag"]).to_parquet(path)
    votes = read_votes(path)
    reference = read_votes(FIXTURES / "lmarena_battles.json")
    assert votes.source["layout"] == "lmarena"
    assert triples(votes) == triples(reference)
    for key in ("style_tokens_a", "style_headers_b", "style_lists_a", "style_bold_b"):
        assert votes.columns[key].tolist() == reference.columns[key].tolist(), key


def test_a_winner_keyword_wins_over_a_model_named_like_it():
    frame = pd.DataFrame(
        {"model_a": ["tie", "x"], "model_b": ["x", "tie"], "winner": ["tie", "tie (bothbad)"]}
    )
    with pytest.warns(RankciWarning, match="is a tie"):
        assert read_votes(frame).outcome.tolist() == [T, BB]


def test_position_column_of_a_battles_table():
    frame = pd.DataFrame(
        {
            "model_a": ["x", "y", "x"],
            "model_b": ["y", "z", "z"],
            "winner": ["model_a"] * 3,
            "position": ["model_a", "b", 2],
        }
    )
    assert read_votes(frame).columns["position"].tolist() == [1, 2, 2]


def test_iso_timestamps_become_seconds():
    frame = pd.DataFrame(
        {
            "model_a": ["x"],
            "model_b": ["y"],
            "winner": ["model_a"],
            "timestamp": ["2024-05-29T00:00:00+00:00"],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)  # one vote
        votes = read_votes(frame)
    assert votes.columns["timestamp"].tolist() == [1716940800.0]


# ── exclusions ─────────────────────────────────────────────────────────────────────────────


def test_min_votes_is_applied_until_every_model_left_has_enough():
    # counts p 2, q 3, r 2, s 1: s goes (r-s), then r has 1 and goes (q-r); p and q keep 2
    frame = pd.DataFrame(
        {
            "model_a": ["p", "p", "q", "r"],
            "model_b": ["q", "q", "r", "s"],
            "winner": ["model_a", "model_b", "tie", "model_a"],
        }
    )
    votes = read_votes(frame, min_votes=2)
    assert votes.models == ("p", "q") and votes.n_votes == 2
    assert votes.excluded == no_exclusions(below_min_votes=2)
    assert votes.source["models_below_min_votes"] == ["r", "s"]
    assert reading_summary(votes).endswith(
        "votes excluded: 2 of models below the vote minimum (r, s)"
    )


def test_missing_values_are_counted_by_kind():
    frame = pd.DataFrame(
        {
            "model_a": ["x", None, "x", "x", "y", "y"],
            "model_b": ["y", "y", "y", "x", "x", "x"],
            "winner": ["model_a", "model_b", None, "model_a", "tie", "model_b"],
            "length": [1.0, 2.0, 3.0, 4.0, np.nan, 0.5],
        }
    )
    votes = read_votes(frame, covariates=["length"])
    # no verdict: row 2; missing value: row 1 (model), row 4 (covariate); self-battle: row 3
    assert votes.excluded == no_exclusions(no_verdict=1, missing_values=2, self_battles=1)
    assert triples(votes) == [("x", "y", A), ("y", "x", B)]
    assert votes.columns["length"].tolist() == [1.0, 0.5]


def test_unknown_winners_excluded_on_request_counted_with_examples():
    frame = pd.DataFrame(
        {
            "model_a": ["x", "x", "y", "y", "z"],
            "model_b": ["y", "z", "z", "x", "x"],
            "winner": ["model_a", "model-b", "w", "model-b", "tie"],
        }
    )
    with pytest.warns(
        RankciWarning,
        match=r"3 votes with an unknown winner left out "
        r"\(for example 'model-b', 'w'\)",
    ):
        votes = read_votes(frame, unknown_winner="exclude")
    assert triples(votes) == [("x", "y", A), ("z", "x", T)]
    assert votes.excluded == no_exclusions(unknown_winner=3)
    assert votes.source["unknown_winner_examples"] == ["model-b", "w"]


def test_reading_summary_names_every_exclusion():
    frame = pd.DataFrame(
        {
            "model_a": ["x", "x", "x", "y"],
            "model_b": ["y", "x", "y", "z"],
            "winner": ["model_a", "model_a", None, "tie"],
        }
    )
    line = reading_summary(read_votes(frame))
    assert line == (
        "read the DataFrame (battles): 3 models, 2 votes (1 tie); "
        "votes excluded: 1 without a verdict, 1 self-battle"
    )


def test_empty_optional_cells_are_kept_blank_and_counted_among_the_votes_read():
    frame = pd.DataFrame(
        {
            "model_a": ["x", "x", "y", "z"],
            "model_b": ["y", "x", "z", "x"],
            "winner": ["model_a", "tie", "model_b", "tie"],
            "question_id": ["p1", None, "", "p2"],
        }
    )
    votes = read_votes(frame)
    # the self-battle (row 1) is left out, so only row 2's empty prompt counts
    assert votes.columns["prompt"].tolist() == ["p1", "", "p2"]
    assert votes.source["blank"] == {"prompt": 1}
