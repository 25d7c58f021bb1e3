"""Bad vote input: each case refused (or warned about) with a message naming the file, row,
column or keyword; detection at the door, for votes and for scores."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from rankci._base import RankciWarning
from rankci.formats import is_vote_table, vote_layout
from rankci.io import read_scores
from rankci.votes import read_votes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "votes"
FILES = {
    "lmarena": "lmarena_battles.json",
    "arena-hard": "arena_hard_judgments.jsonl",
    "mt-bench": "mt_bench_pair.jsonl",
    "alpaca-eval": "alpaca_eval_annotations.json",
    "battles": "battles.csv",
}


def battles(winners, a=None, b=None) -> pd.DataFrame:
    n = len(winners)
    return pd.DataFrame({"model_a": a or ["x"] * n, "model_b": b or ["y"] * n, "winner": winners})


# ── detection ──────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("layout", sorted(FILES))
def test_each_fixture_is_recognised_and_forcing_its_layout_reads_the_same(layout):
    path = FIXTURES / FILES[layout]
    keywords = {"baseline": "gpt-4-0314"} if layout == "arena-hard" else {}
    auto = read_votes(path, **keywords)
    forced = read_votes(path, layout=layout, **keywords)
    assert auto.source["layout"] == forced.source["layout"] == layout
    assert auto.outcome.tolist() == forced.outcome.tolist()
    assert auto.a.tolist() == forced.a.tolist() and auto.models == forced.models


def test_an_lmarena_file_forced_as_plain_battles_has_no_style_columns():
    votes = read_votes(FIXTURES / FILES["lmarena"], layout="battles")
    assert votes.source["layout"] == "battles"
    assert "style_tokens_a" in votes.columns  # conv_metadata is read whenever it is there
    assert votes.n_votes == 6


@pytest.mark.parametrize(
    "columns, layout",
    [
        (["model_a", "model_b", "winner"], "battles"),
        (["model_a", "model_b", "winner", "conv_metadata", "tstamp"], "lmarena"),
        (["question_id", "model", "judge", "games"], "arena-hard"),
        (["question_id", "model_1", "model_2", "g1_winner", "g2_winner", "turn"], "mt-bench"),
        (["instruction", "generator_1", "generator_2", "preference"], "alpaca-eval"),
        (["model", "item", "score"], None),
        (["item", "m1", "m2"], None),
        (["Model_A", "Model_B", "Winner"], None),  # names are exact
    ],
)
def test_vote_layouts_are_recognised_by_their_fields(columns, layout):
    assert vote_layout(columns) == layout
    assert is_vote_table(columns) is (layout is not None)


@pytest.mark.parametrize("layout", sorted(FILES))
def test_a_vote_table_is_never_read_as_scores(layout):
    frame = read_votes_frame(layout)
    with pytest.raises(
        ValueError, match=rf"vote table \(layout '{layout}'.*rankci\.votes\.read_votes"
    ):
        read_scores(frame)


def read_votes_frame(layout: str) -> pd.DataFrame:
    from rankci.votes.read import read_vote_frame

    return read_vote_frame(FIXTURES / FILES[layout])


def test_a_score_table_with_a_model_and_a_score_column_stays_scores():
    frame = pd.DataFrame(
        {
            "model": ["a", "b"],
            "item": ["q", "q"],
            "score": [1, 0],
            "model_a": ["u", "v"],
            "model_b": ["v", "u"],
            "winner": ["x", "y"],
        }
    )
    assert read_scores(frame).n_models == 2


def test_forcing_a_layout_whose_fields_are_missing_names_the_field():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "battles.csv' lacks the columns 'model_1', 'model_2', 'g1_winner', 'g2_winner' that "
            "layout 'mt-bench' needs"
        ),
    ):
        read_votes(FIXTURES / FILES["battles"], layout="mt-bench")


def test_a_table_of_no_layout_lists_the_layouts_tried():
    frame = pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "result": ["model_a"]})
    with pytest.raises(ValueError) as error:
        read_votes(frame)
    message = str(error.value)
    assert "not a vote table" in message and "battles (lacks 'winner')" in message
    assert "mt-bench (lacks 'model_1', 'model_2', 'g1_winner', 'g2_winner')" in message
    assert "alpaca-eval (lacks 'generator_1', 'generator_2', 'preference')" in message
    assert "'result'" in message and "winner=" in message


def test_a_named_winner_column_that_is_absent_is_named():
    with pytest.raises(ValueError, match="lacks the column 'verdict' that layout 'battles' needs"):
        read_votes(battles(["model_a"]), winner="verdict")


# ── unknown winners ────────────────────────────────────────────────────────────────────────


def test_an_unknown_winner_in_a_file_names_file_row_column_and_value(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\ny,z,tie\nx,z,model_c\n")
    with pytest.raises(ValueError) as error:
        read_votes(path)
    message = str(error.value)
    assert f"'{path}', line 4, column 'winner': unknown winner 'model_c'" in message
    assert "'tie (bothbad)'" in message and "unknown_winner='exclude'" in message


def test_a_winner_naming_a_third_model_is_unknown():
    with pytest.raises(ValueError, match="row 1, column 'winner': unknown winner 'z'"):
        read_votes(battles(["x", "z"]))


@pytest.mark.parametrize(
    "layout, frame, message",
    [
        (
            "mt-bench",
            pd.DataFrame(
                {
                    "model_1": ["x"],
                    "model_2": ["y"],
                    "g1_winner": ["model_3"],
                    "g2_winner": ["model_1"],
                }
            ),
            "row 0, column 'g1_winner/g2_winner': unknown winner 'model_3'; MT-Bench winners",
        ),
        (
            "alpaca-eval",
            pd.DataFrame({"generator_1": ["x"], "generator_2": ["y"], "preference": [3.0]}),
            "row 0, column 'preference': unknown winner 3.0; AlpacaEval preferences are numbers "
            "in [1, 2]",
        ),
        (
            "arena-hard",
            pd.DataFrame(
                {
                    "model": ["y"],
                    "baseline": ["x"],
                    "games": [[{"score": "A>B"}, {"score": "A>>>B"}]],
                }
            ),
            "row 0, column 'games[].score': unknown winner 'A>>>B'; Arena-Hard verdicts are A>>B",
        ),
    ],
)
def test_unknown_verdicts_of_the_judgment_layouts(layout, frame, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        read_votes(frame)


# ── self-battles, one vote, all ties, nothing left ─────────────────────────────────────────


def test_a_model_playing_itself_is_excluded_and_counted_never_an_error():
    frame = battles(["model_a", "model_b", "tie"], a=["x", "y", "x"], b=["x", "x", "y"])
    votes = read_votes(frame)
    assert votes.excluded["self_battles"] == 1 and votes.n_votes == 2


def test_only_self_battles_is_an_error_saying_so():
    with pytest.raises(ValueError, match=re.escape("no vote is left to read (2 self battles)")):
        read_votes(battles(["model_a", "tie"], a=["x", "y"], b=["x", "y"]))


def test_one_vote_warns():
    with pytest.warns(RankciWarning, match="holds one vote: nothing can be ranked from it"):
        votes = read_votes(battles(["model_a"]))
    assert votes.n_votes == 1


def test_all_ties_warn_but_are_read():
    with pytest.warns(RankciWarning, match="every one of the 3 votes of the DataFrame is a tie"):
        votes = read_votes(battles(["tie", "tie (bothbad)", "TIE"]))
    assert votes.n_votes == 3


def test_no_verdict_anywhere_is_an_error():
    with pytest.raises(ValueError, match=re.escape("no vote is left to read (2 no verdict)")):
        read_votes(battles([None, ""]))


# ── files and columns ──────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("votes.csv", "", "is empty: no votes to read"),
        ("votes.jsonl", "", "is empty: no votes to read"),
        ("votes.json", "  \n", "is empty: no votes to read"),
        ("votes.json", "[]", "has no rows: no votes to read"),
        ("votes.csv", "model_a,model_b,winner\n", "has no rows: no votes to read"),
        ("votes.json", '{"model_a": "x"', "is not valid JSON"),
        ("votes.json", "[1, 2]", "is not a JSON array of objects"),
    ],
)
def test_empty_and_unreadable_files_name_the_file(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        read_votes(path)
    assert str(path) in str(error.value)


def test_a_missing_file():
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_votes("no/such/votes.csv")


def test_an_empty_dataframe():
    with pytest.raises(ValueError, match="the DataFrame has no rows"):
        read_votes(pd.DataFrame())


def test_arena_hard_without_a_baseline_asks_for_one():
    with pytest.raises(ValueError, match=r"without a 'baseline' field; pass baseline="):
        read_votes(FIXTURES / FILES["arena-hard"])


def test_arena_hard_games_that_are_not_a_list():
    frame = pd.DataFrame({"model": ["y"], "games": ["A>B"]})
    with pytest.raises(ValueError, match=r"row 0: 'games' is not a list of games"):
        read_votes(frame, baseline="x")


def test_a_non_numeric_covariate_names_row_and_column():
    frame = battles(["model_a", "tie"]).assign(length=["1.5", "long"])
    with pytest.raises(
        ValueError, match=re.escape("the DataFrame, row 1, column 'length': 'long' is not a number")
    ):
        read_votes(frame, covariates=["length"])


def test_an_absent_covariate_or_role_column_is_named():
    with pytest.raises(ValueError, match="the covariate column 'len' is not in the DataFrame"):
        read_votes(battles(["model_a", "tie"]), covariates=["len"])
    with pytest.raises(ValueError, match="the voter column 'who' is not in the DataFrame"):
        read_votes(battles(["model_a", "tie"]), voter="who")


def test_a_bad_position_or_turn_names_the_row():
    with pytest.raises(
        ValueError, match=r"row 1, column 'position': position 'left' is not 1 or 2"
    ):
        read_votes(battles(["model_a", "tie"]).assign(position=[1, "left"]))
    with pytest.raises(ValueError, match=r"row 0, column 'turn': turn 1.5 is not a whole number"):
        read_votes(battles(["model_a", "tie"]).assign(turn=[1.5, 2]))


def test_names_differing_by_surrounding_spaces_are_an_error():
    frame = battles(["model_a", "tie"], a=["x", "x "], b=["y", "y"])
    with pytest.raises(
        ValueError,
        match="the model names of the DataFrame has two spellings of "
        "one model that differ only by surrounding whitespace: 'x' and 'x '",
    ):
        read_votes(frame)


@pytest.mark.parametrize(
    "keywords, message",
    [
        ({"layout": "wide"}, "unknown layout 'wide'"),
        ({"format": "xlsx"}, "unknown format 'xlsx'"),
        ({"unknown_winner": "drop"}, "unknown unknown_winner 'drop'"),
        ({"strong_votes": 0}, "strong_votes must be a positive integer, got 0"),
        ({"strong_votes": 1.5}, "strong_votes must be a positive integer, got 1.5"),
        ({"min_votes": -1}, "min_votes must be a non-negative integer, got -1"),
        ({"layout": "mt-bench", "winner": "w"}, "model_a=, model_b= and winner= name the columns"),
        ({"games": "two"}, "games='two' applies to MT-Bench judgments; the DataFrame is read as"),
        ({"games": "three"}, "unknown games 'three'"),
    ],
)
def test_bad_options_are_named(keywords, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankciWarning)
        with pytest.raises(ValueError, match=re.escape(message)):
            read_votes(battles(["model_a", "tie"]), **keywords)
