"""The command line's doors (issue 15): one-line errors that name flags, output paths checked
before any work, and a reading summary on stderr for every command."""

import json
import re

import numpy as np
import pandas as pd
import pytest

import rankci.commands.rank
from rankci.cli import main

PYTHON_KEYWORD = re.compile(
    r"\b(format|layout|model|item|score|cluster|prompt|bounds|missing|unit)="
)


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        [
            (m, f"{k:03d}", float(rng.random() < p), f"s{k % 4}")
            for m, p in (("a", 0.8), ("b", 0.5), ("c", 0.2))
            for k in range(40)
        ],
        columns=["model", "item", "score", "subject"],
    )
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("rankci: error:")]
    assert len(lines) == 1, err
    assert PYTHON_KEYWORD.search(lines[0]) is None, lines[0]
    return lines[0]


# ---------------------------------------------------------------------- missing file
@pytest.mark.parametrize("command", ["rank", "scores", "monitor", "omnibus", "plan", "taubest"])
def test_a_missing_file_is_a_one_line_error(tmp_path, capsys, command):
    assert main([command, str(tmp_path / "nope.csv")]) == 2
    assert "no such file or directory" in _error(capsys)
    assert main([command, str(tmp_path / "nope.jsonl")]) == 2  # not a table suffix: logs?
    assert "no such file or directory" in _error(capsys)


# ---------------------------------------------------------------------- output paths
def _never(args):
    raise AssertionError("the command ran although its output path is unusable")


@pytest.mark.parametrize("bad", ["missing-dir/x.json", "."])
def test_output_paths_are_checked_before_any_work(table, tmp_path, capsys, monkeypatch, bad):
    monkeypatch.setattr(rankci.commands.rank, "run", _never)
    target = str(tmp_path / bad)
    assert main(["rank", str(table[0]), "-o", target]) == 2
    message = _error(capsys)
    assert target in message
    assert ("does not exist" if "missing" in bad else "is a directory") in message


@pytest.mark.parametrize(
    "argv",
    [
        ["scores", "DATA", "-o", "{tmp}/missing-dir/x.csv"],
        ["monitor", "DATA", "-o", "{tmp}"],
        ["omnibus", "DATA", "-o", "{tmp}/missing-dir/x.json"],
        ["report", "DATA", "-o", "{tmp}/missing-dir/r.html"],
        ["report", "DATA", "-o", "{tmp}"],
        ["demo", "--report", "{tmp}/missing-dir/r.html"],
        ["demo", "--report", "{tmp}"],
    ],
)
def test_every_command_checks_its_output_path(table, tmp_path, capsys, argv):
    argv = [str(table[0]) if a == "DATA" else a.format(tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    assert re.search(r"(does not exist|is a directory)", _error(capsys))
    assert capsys.readouterr().out == ""


def test_demo_without_a_report_ignores_the_report_path(tmp_path, capsys):
    argv = ["demo", "--dataset", "chembench", "--no-report", "--report", str(tmp_path / "x/y")]
    assert main([*argv, "--format", "json"]) == 0


# ---------------------------------------------------------------------- messages name flags
def test_scores_outside_the_unit_interval_name_the_bounds_flag(table, tmp_path, capsys):
    path, frame = table
    scaled = tmp_path / "percent.csv"
    frame.assign(score=frame.score * 100).to_csv(scaled, index=False)
    assert main(["scores", str(scaled), "--method", "normal"]) == 2
    assert "--bounds LOW HIGH" in _error(capsys)
    out = tmp_path / "out.json"
    assert (
        main(
            [
                "scores",
                str(scaled),
                "--method",
                "normal",
                "--bounds",
                "0",
                "100",
                "--format",
                "json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    means = frame.groupby("model")["score"].mean() * 100
    got = {m["model"]: m["score"] for m in json.loads(out.read_text())["models"]}
    assert got == pytest.approx(means.to_dict())
    assert main(["rank", str(scaled), "--bounds", "1", "0"]) == 2
    assert "LOW must be below HIGH" in _error(capsys)


def test_no_complete_item_names_the_missing_flag(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("model,item,score\na,q1,1\nb,q2,0\nc,q1,1\nc,q2,0\n")
    assert main(["rank", str(path)]) == 2
    assert "--missing pairwise" in _error(capsys)
    assert main(["omnibus", str(path)]) == 2  # omnibus has no --missing: it is not suggested
    assert "use rankci rank or scores with --missing pairwise" in _error(capsys)


def test_unknown_extension_names_the_from_flag(tmp_path, capsys):
    path = tmp_path / "scores.data"
    path.write_text("model,item,score\na,q1,1\nb,q1,0\n")
    assert main(["rank", str(path), "--from", "auto"]) == 2
    assert "--from csv, tsv, parquet or jsonl" in _error(capsys)
    assert main(["rank", str(path), "--from", "csv", "--format", "json"]) == 0


def test_unfamiliar_columns_name_the_column_flags(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("engine,qid,value\na,q1,1\na,q2,0\nb,q1,0\nb,q2,1\n")
    assert main(["rank", str(path)]) == 2
    message = _error(capsys)
    assert "'engine', 'qid', 'value'" in message
    assert "--model-col, --item-col, --score-col" in message and "--layout wide" in message
    argv = [
        "scores",
        str(path),
        "--model-col",
        "engine",
        "--item-col",
        "qid",
        "--method",
        "normal",
        "--format",
        "json",
    ]
    assert main(argv) == 0


def test_wide_errors_name_the_column_flags(tmp_path, capsys):
    path = tmp_path / "w.csv"
    path.write_text("item,a,b,note\nq1,1,0,x\nq2,0,1,y\n")
    assert main(["rank", str(path), "--layout", "wide"]) == 2
    assert "--item-col, --cluster-col, --prompt-col" in _error(capsys)


def test_whitespace_split_names_are_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("model,item,score\nm1,q1,1\nm1 ,q2,0\nm2,q1,1\nm2,q2,0\n")
    assert main(["rank", str(path)]) == 2
    assert "'m1' and 'm1 '" in _error(capsys)


def test_a_unit_without_its_column_names_the_flags(table, capsys):
    assert main(["rank", str(table[0]), "--unit", "prompt"]) == 2
    assert "--unit prompt needs a prompt column" in _error(capsys)


# ---------------------------------------------------------------------- reading summary
@pytest.mark.parametrize(
    "argv",
    [
        ["rank"],
        ["scores", "--method", "normal"],
        ["monitor"],
        ["omnibus"],
        ["plan"],
        ["taubest"],
    ],
)
def test_every_command_prints_a_reading_summary(table, tmp_path, capsys, argv):
    path, _ = table
    assert main([argv[0], str(path), *argv[1:], "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    summary = [line for line in err.splitlines() if line.startswith("rankci: read ")]
    assert len(summary) == 1, err
    assert "3 models, 40 items, 4 clusters, 120 scores; rows excluded: none" in summary[0]


def test_the_summary_says_what_was_excluded_and_what_is_unscored(tmp_path, capsys):
    rows = ["model,item,prompt,score"]
    rows += [f"{m},q{k},p{v},{(k + v) % 2}" for m in "ab" for k in range(6) for v in (1, 2)]
    rows += [f"a,q{k},p3,1" for k in range(6)]  # a variant only model a has
    rows += [f"c,q{k},p1,1" for k in range(3)] + [f"c,q{k},p2,0" for k in range(3)]
    path = tmp_path / "s.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "rank.json"
    assert main(["rank", str(path), "--format", "json", "-o", str(out)]) == 0
    summary = capsys.readouterr().err
    assert "rows excluded: 6 (prompt variants that not every model has)" in summary
    assert "6 cells not scored (c 6)" in summary
    excluded = json.loads(out.read_text())["excluded"]
    assert excluded["inconsistent_prompts"]["rows_by_model"] == {"a": 6}


def test_the_mixed_model_reports_the_prompt_rule_like_every_command(tmp_path):
    rows = ["model,item,prompt,score"]
    rows += [
        f"{m},q{k},p{v},{int((k * (j + 1) + v) % 3 > 0)}"
        for j, m in enumerate("abc")
        for k in range(12)
        for v in (1, 2)
    ]
    rows += [f"a,q{k},p3,1" for k in range(6)]  # a variant only model a has: 6 rows
    path = tmp_path / "s.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "mixed.json"
    assert (
        main(["omnibus", str(path), "--method", "mixed", "--format", "json", "-o", str(out)]) == 0
    )
    payload = json.loads(out.read_text())
    for excluded in (payload["excluded"], payload["ranking"]["excluded"]):
        record = excluded["inconsistent_prompts"]
        assert record["rows"] == 6 and record["rows_by_model"] == {"a": 6}
        assert record["variants"] == ["p3"]
        assert excluded["rows_excluded"] == 0  # the fit itself drops nothing
        assert "excluded when the table was read" in excluded["reason"]
    assert payload["n_obs"] == 3 * 12 * 2
    # the same record as the fixed-sample ranking's
    rank_out = tmp_path / "rank.json"
    assert main(["rank", str(path), "--format", "json", "-o", str(rank_out)]) == 0
    rank_record = json.loads(rank_out.read_text())["excluded"]["inconsistent_prompts"]
    assert rank_record == payload["excluded"]["inconsistent_prompts"]
