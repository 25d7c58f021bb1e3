"""The `rankci` command, run as a user would (a real subprocess for the entry point)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

import rankci
from rankci.cli import main
from rankci.simulate import simulate_scores


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    sim = simulate_scores(np.linspace(2.0, -2.0, 8), 1600, n_clusters=8, rng=2)
    path = tmp_path_factory.mktemp("cli") / "scores.parquet"
    sim.scores.to_frame().to_parquet(path)
    return path, sim.scores


def test_rank_json_matches_the_python_api(data_file, capsys):
    path, scores = data_file
    assert main(["rank", str(path), "--format", "json", "--delta", "0.01", "--top-k", "2"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = rankci.rank(scores, delta=0.01).to_dict(2)
    assert payload["models"] == expected["models"]
    assert payload["dominance"] == expected["dominance"]
    assert (payload["alpha"], payload["coverage"], payload["test"], payload["unit"]) == (
        0.05,
        "simultaneous",
        "auto",  # the default test (issue 25); with --delta 0.01 it is the t on every pair
        "item",
    )
    assert payload["test_options"]["test_rule"] == "t"
    assert payload["n_units"] == 1600 and payload["k"] == 2


@pytest.mark.parametrize("fmt", ["table", "csv", "markdown"])
def test_rank_text_formats(data_file, capsys, fmt):
    path, scores = data_file
    assert (
        main(["rank", str(path), "--format", fmt, "--unit", "cluster", "--test", "wilcoxon"]) == 0
    )
    out = capsys.readouterr().out
    for model in scores.models:
        assert model in out
    if fmt == "csv":
        frame = pd.read_csv(pd.io.common.StringIO(out))
        assert list(frame.columns[:6]) == [
            "model",
            "score",
            "rank",
            "rank_lower",
            "rank_upper",
            "tier",
        ]
    elif fmt == "markdown":
        assert "| model |" in out and "| ---:" in out
    else:
        assert "rank interval" in out and "With probability at least 95%" in out


def test_options_reach_the_method(data_file, tmp_path, capsys):
    path, scores = data_file
    out = tmp_path / "r.json"
    argv = [
        "rank",
        str(path),
        "--coverage",
        "marginal",
        "--alpha",
        "0.1",
        "--test",
        "permutation",
        "--seed",
        "3",
        "--reps",
        "999",
        "--format",
        "json",
        "-o",
        str(out),
    ]
    # 999 resamples cannot resolve p-values small enough for Holm over all 56 pairs at 0.05:
    # the library says so, and the command line passes it on
    warning = "certify nothing at an alpha below 0.056"
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "rankci: warning: with reps=999" in err and warning in err
    payload = json.loads(out.read_text())
    with pytest.warns(rankci.RankciWarning, match=warning):
        expected = rankci.rank(
            scores, coverage="marginal", alpha=0.1, test="permutation", rng=3, reps=999
        ).to_dict()
    assert payload["models"] == expected["models"] and payload["dominance"] is None


def test_by_cluster_and_filter(data_file, capsys):
    path, _ = data_file
    assert main(["rank", str(path), "--by-cluster", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert sorted(payload["clusters"]) == [f"c{k}" for k in range(8)]
    assert main(["rank", str(path), "--filter-uninformative", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert "filter" in payload["details"] and payload["alpha"] == pytest.approx(0.035)


def test_column_options_and_wide_layout(tmp_path, capsys):
    wide = pd.DataFrame({"qid": ["a", "b", "c", "d"], "m1": [1, 1, 1, 0], "m2": [0, 0, 1, 0]})
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    assert (
        main(["rank", str(path), "--layout", "wide", "--item-col", "qid", "--format", "csv"]) == 0
    )
    assert "m1" in capsys.readouterr().out


def test_bad_input_exits_2_with_a_message(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"model": ["a", "b"], "item": ["q", "q"], "score": [1, "x"]}).to_csv(
        path, index=False
    )
    assert main(["rank", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankci: error:") and "not numeric at line 3" in err
    with pytest.raises(SystemExit) as stop:
        main(["rank", str(path), "--test", "anova"])
    assert stop.value.code == 2


def test_demo_runs_on_the_bundled_data_through_the_installed_command():
    done = subprocess.run(
        [sys.executable, "-m", "rankci", "demo"], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "MMLU-Pro" in out and "gemini-3.1-pro" in out and "Llama-2-7b-hf" in out
    assert "With probability at least 95%" in out
    assert out.count("\n") > 32


def test_report_command_writes_a_page_with_every_model(data_file, tmp_path):
    path, scores = data_file
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out), "--top-k", "2", "--unit", "cluster"]) == 0
    text = out.read_text()
    table = text.split('id="leaderboard-table">', 1)[1].split("</table>")[0]
    assert table.count("<tr>") == scores.n_models + 1 and "top-2" in table
    assert "cluster units" in text
