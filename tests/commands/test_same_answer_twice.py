"""Reproducible by default (issue 16): every command that draws random numbers gives the same
JSON twice without being told a seed, and records the seed it used."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rankci.cli import main


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(11)
    p = np.linspace(0.35, 0.75, 6)
    x = (rng.random((80, 6)) < p).astype(int)
    rows = [
        {"model": f"m{j}", "item": f"q{i:02d}", "cluster": f"c{i % 8}", "score": int(x[i, j])}
        for i in range(80)
        for j in range(6)
    ]
    path = tmp_path_factory.mktemp("data") / "scores.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


COMMANDS = {
    "rank bootstrap": ["rank", "--test", "bootstrap", "--reps", "999"],
    "rank permutation": ["rank", "--test", "permutation", "--reps", "999"],
    "rank max-t": ["rank", "--multiplicity", "max-t", "--draws", "500"],
    "rank max-t bootstrap": ["rank", "--multiplicity", "max-t", "--resampling", "bootstrap",
                             "--draws", "300"],
    "taubest max-t": ["taubest", "--multiplicity", "max-t", "--draws", "500"],
    "scores bootstrap": ["scores", "--method", "bootstrap", "--reps", "500"],
    "scores bca": ["scores", "--method", "bca", "--reps", "500"],
    "scores cluster-bootstrap": ["scores", "--method", "cluster-bootstrap", "--reps", "300"],
    # 8 clusters, 2^8 > 200: 200 random sign vectors from the default seed
    "scores cluster-wild": ["scores", "--method", "cluster-wild", "--reps", "200"],
    "monitor": ["monitor", "--look-every", "10"],
    "benchmarks permutation": ["benchmarks", "--test", "permutation", "--no-overall",
                               "--benchmark-col",
                               "cluster"],
}


def _json(argv, tmp_path, name):
    out = tmp_path / name
    assert main([*argv, "--format", "json", "-o", str(out)]) == 0
    return out.read_text()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_same_command_twice_gives_the_same_json(name, data_file, tmp_path):
    command, *options = COMMANDS[name]
    argv = [command, data_file, *options]
    first = _json(argv, tmp_path, "first.json")
    second = _json(argv, tmp_path, "second.json")
    assert first == second
    payload = json.loads(first)
    spec = payload["spec"]
    if command == "monitor":
        assert payload["order_seed"] == 0
    else:
        assert spec["seed"] == 0  # the default seed, recorded


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_scores_and_report_agree_on_the_same_data(data_file, tmp_path):
    scores = json.loads(_json(["scores", data_file], tmp_path, "scores.json"))
    report = tmp_path / "report.html"
    assert main(["report", data_file, "-o", str(report)]) == 0
    page = report.read_text()
    for row in scores["models"]:  # the report's table shows the same intervals, to 4 decimals
        assert f"[{row['lower']:.4f}, {row['upper']:.4f}]" in page, row["model"]


def test_messages_name_the_test_and_overall_flags(data_file, capsys):
    status = main(["benchmarks", data_file, "--test", "permutation", "--benchmark-col", "cluster"])
    err = capsys.readouterr().err
    assert status == 2
    assert "use --test auto, 't' or 'z', or --no-overall" in err and "overall=False" not in err
