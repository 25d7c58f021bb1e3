"""Votes on the command line: ``rankci votes`` says what was read, and the score commands
recognise a vote table at the door and refuse it, naming the reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankci.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "votes"


def test_votes_prints_the_tally_and_the_reading_summary(capsys):
    assert main(["votes", str(FIXTURES / "mt_bench_pair.jsonl")]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["model", "votes", "wins", "losses", "ties"]
    # mt_bench_pair.jsonl by hand: alpha beats Beta once; Beta loses to gamma once; three ties
    assert [line.split()[-4:] for line in lines[2:]] == [
        ["3", "0", "2", "1"],  # Beta-Chat v2
        ["4", "1", "0", "3"],  # alpha-7b
        ["3", "1", "0", "2"],  # gamma_13B
    ]
    assert "(mt-bench): 3 models, 5 votes (3 ties); votes excluded: 1 without a verdict" in err
    assert "2 judgments whose two games disagree, read as ties" in err


def test_votes_json_records_exclusions_layout_and_spec(capsys):
    path = FIXTURES / "arena_hard_judgments.jsonl"
    assert main(["votes", str(path), "--baseline", "gpt-4-0314", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["layout"] == "arena-hard" and payload["n_votes"] == 11
    assert payload["excluded"]["no_verdict"] == 1
    assert {m["model"]: m["votes"] for m in payload["models"]} == {
        "Beta-Chat v2": 5,
        "alpha-7b": 6,
        "gpt-4-0314": 11,
    }
    assert "position" in payload["columns"]
    assert payload["spec"]["command"] == "votes" and payload["spec"]["strong_votes"] == 3


def test_votes_forced_layout_and_min_votes(capsys):
    path = FIXTURES / "battles.csv"
    assert (
        main(["votes", str(path), "--layout", "battles", "--min-votes", "3", "--format", "csv"])
        == 0
    )
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "model,votes,wins,losses,ties"
    assert "007" not in out
    assert "1 of models below the vote minimum (007)" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["arena_hard_judgments.jsonl"], "pass --baseline the model"),
        (["battles.csv", "--layout", "mt-bench"], "lacks the columns 'model_1', 'model_2'"),
        (["battles.csv", "--strong-votes", "0"], "--strong-votes must be a positive integer"),
        (["battles.csv", "--games", "two"], "--games two applies to MT-Bench judgments"),
    ],
)
def test_votes_errors_speak_in_flags(argv, message, capsys):
    argv = ["votes", str(FIXTURES / argv[0]), *argv[1:]]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_votes_unknown_winner_error_names_the_flag(tmp_path, capsys):
    path = tmp_path / "votes.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\ny,x,left\n")
    assert main(["votes", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 3, column 'winner': unknown winner 'left'" in err  # the header is line 1
    assert "Pass --unknown-winner exclude" in err
    assert main(["votes", str(path), "--unknown-winner", "exclude"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: " in err and "1 vote with an unknown winner left out (for example 'left')" in err
    )
    assert "holds one vote: nothing can be ranked from it" in err
    assert "2 models, 1 vote (0 ties); votes excluded: 1 with an unknown winner" in err


@pytest.mark.parametrize(
    "name",
    [
        "lmarena_battles.json",
        "arena_hard_judgments.jsonl",
        "mt_bench_pair.jsonl",
        "alpaca_eval_annotations.json",
        "battles.csv",
    ],
)
@pytest.mark.parametrize("command", ["scores", "taubest"])
def test_score_commands_recognise_a_vote_table_and_name_the_reader(command, name, capsys):
    # (`rankci rank` ranks a vote table: tests/votes/test_bradley_terry_cli.py)
    path = str(FIXTURES / name)
    assert main([command, path]) == 2
    err = capsys.readouterr().err
    assert f"{path} is a vote table (layout " in err
    assert "vote tables are read by rankci.votes.read_votes" in err
    assert f"rankci votes {path} shows what is read" in err


def test_a_vote_layout_flag_on_a_score_command_says_so(capsys):
    path = str(FIXTURES / "battles.csv")
    assert main(["scores", path, "--layout", "arena-hard"]) == 2
    err = capsys.readouterr().err
    assert f"--layout arena-hard says {path} holds pairwise votes" in err
    # rank reads votes, in the layout forced
    assert main(["rank", path, "--layout", "arena-hard"]) == 2
    assert "lacks the columns 'model', 'games' that layout 'arena-hard'" in capsys.readouterr().err


def test_vote_choices_come_from_rankci_formats():
    from rankci import formats
    from rankci.votes import read

    assert read.VOTE_FORMATS is formats.VOTE_FORMATS
    assert read.VOTE_LAYOUTS is formats.VOTE_LAYOUTS
    from rankci import io

    assert io.is_vote_table is formats.is_vote_table


# (a JSON array, as lmarena_battles.json, is not a table the score reader parses: the vote reader
# then reads it once, to name its layout)
@pytest.mark.parametrize(
    "name", ["arena_hard_judgments.jsonl", "mt_bench_pair.jsonl", "battles.csv"]
)
def test_a_vote_table_is_recognised_from_the_one_read_as_scores(name, monkeypatch, capsys):
    # the score reader's refusal carries the vote layout, so the file is not read a second time
    import rankci.votes.read as votes_read

    def second_read(*args, **kwargs):
        raise AssertionError("the vote table was read a second time")

    monkeypatch.setattr(votes_read, "read_vote_frame", second_read)
    path = str(FIXTURES / name)
    assert main(["scores", path]) == 2
    assert f"{path} is a vote table (layout " in capsys.readouterr().err
