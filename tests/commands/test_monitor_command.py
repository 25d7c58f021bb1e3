"""`rankci monitor DATA`: the issue's options and JSON schema."""

import json

import numpy as np
import pandas as pd
import pytest

import rankci
from rankci.cli import main
from rankci.sequential import replay


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(8)
    x = (rng.random((400, 4)) < [0.85, 0.6, 0.55, 0.2]).astype(float)
    x[5, 1] = np.nan
    scores = rankci.Scores.from_matrix(x, models=["w", "x", "y", "z"])
    path = tmp_path_factory.mktemp("monitor") / "scores.csv"
    scores.to_frame().to_csv(path, index=False)
    return path, scores


def test_json_schema_and_agreement_with_python(data_file, capsys):
    path, scores = data_file
    argv = ["monitor", str(path), "--format", "json", "--order-seed", "4", "--look-every", "10%",
            "--retire", "topk", "--k", "1", "--certifier", "exact"]  # fmt: skip
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    for key in ("alpha", "sampling", "certifier", "bet", "order_seed", "n_items", "excluded",
                "looks", "final", "evaluations", "cost_fraction"):  # fmt: skip
        assert key in payload, key
    assert (payload["alpha"], payload["sampling"], payload["certifier"]) == (
        0.05,
        "finite",
        "exact",
    )
    assert (payload["bet"], payload["order_seed"], payload["n_items"]) == ("mixture", 4, 399)
    assert payload["excluded"]["items_excluded"] == 1
    assert set(payload["looks"][0]) >= {"t", "n_certified", "evaluations"}
    row = payload["final"]["models"][0]
    assert set(row) >= {"model", "score", "rank_lower", "rank_upper", "tier", "rank_set"}
    expected = replay(scores, order_seed=4, look_every="10%", retire="topk", k=1,
                      certifier="exact").to_dict()  # fmt: skip
    assert payload["final"] == expected["final"]
    assert payload["looks"] == expected["looks"]
    assert payload["evaluations"] == expected["evaluations"] < 399 * 4
    assert payload["cost_fraction"] == pytest.approx(payload["evaluations"] / (399 * 4))


def test_table_output_and_options(data_file, capsys):
    path, scores = data_file
    argv = ["monitor", str(path), "--sampling", "iid", "--bet", "agrapa", "--certifier",
            "shortcut", "--look-every", "25", "--retire", "width:1", "--alpha", "0.1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    for model in scores.models:
        assert model in out
    assert "shortcut certifier, agrapa bet, alpha = 0.1" in out
    assert "anytime-valid" in out


def test_errors_exit_with_status_2(tmp_path, data_file, capsys):
    frame = pd.DataFrame({"model": ["a", "b", "a", "b"], "item": [1, 1, 2, 2],
                          "score": [0.5, 1.0, 2.0, 0.0]})  # fmt: skip
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    assert main(["monitor", str(bad)]) == 2
    assert "outside [0, 1]" in capsys.readouterr().err
    path, _ = data_file
    assert main(["monitor", str(path), "--retire", "topk"]) == 2
    assert "needs k" in capsys.readouterr().err
    assert main(["monitor", str(path), "--retire", "sometimes"]) == 2
    assert "unknown retirement rule" in capsys.readouterr().err
    assert main(["monitor", str(path), "--look-every", "0"]) == 2
    assert "look_every" in capsys.readouterr().err
