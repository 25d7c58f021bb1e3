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
    assert "--retire topk needs --k" in capsys.readouterr().err  # in the CLI's words
    assert main(["monitor", str(path), "--retire", "sometimes"]) == 2
    assert "unknown retirement rule" in capsys.readouterr().err
    assert main(["monitor", str(path), "--look-every", "0"]) == 2
    assert "--look-every" in capsys.readouterr().err


def test_freeze_flag_reaches_the_monitor_and_the_json(tmp_path, capsys):
    rng = np.random.default_rng(3)
    x = (rng.random((300, 10)) < np.linspace(0.9, 0.2, 10)).astype(float)
    scores = rankci.Scores.from_matrix(x)
    path = tmp_path / "ten.csv"
    scores.to_frame().to_csv(path, index=False)
    for flag, frozen in (("auto", True), ("on", True), ("off", False)):
        argv = ["monitor", str(path), "--format", "json", "--certifier", "shortcut",
                "--look-every", "5%", "--freeze", flag]  # fmt: skip
        assert main(argv) == 0
        payload = json.loads(capsys.readouterr().out)
        assert payload["freeze"] is frozen
        assert payload["spec"]["freeze"] == flag  # the command's spec records the flag
        expected = replay(scores, certifier="shortcut", look_every="5%", freeze=frozen)
        assert payload["looks"] == expected.to_dict()["looks"]
    argv = ["monitor", str(path), "--certifier", "shortcut", "--freeze", "on"]
    assert main(argv) == 0
    assert "settled pairs frozen" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:  # argparse's choices: status 2, naming the flag
        main(["monitor", str(path), "--freeze", "sometimes"])
    assert exit_info.value.code == 2
    assert "argument --freeze: invalid choice" in capsys.readouterr().err


def test_the_prompt_rule_exclusion_is_carried_like_every_command(tmp_path, capsys):
    """Issue 15: the rows dropped by the prompt-variant rule are in the monitor's ``excluded``."""

    def score(j, k, v):
        return int((k * (j + 1) + v) % 3 > 0)

    rows = ["model,item,prompt,score"]
    rows += [f"{m},q{k:02d},p{v},{score(j, k, v)}" for j, m in enumerate("abc")
             for k in range(40) for v in (1, 2)]  # fmt: skip
    rows += [f"a,q{k:02d},p3,0" for k in range(7)]  # a variant only model a has: 7 rows
    path = tmp_path / "prompts.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "monitor.json"
    assert main(["monitor", str(path), "--format", "json", "-o", str(out)]) == 0
    payload = json.loads(out.read_text())
    record = payload["excluded"]["inconsistent_prompts"]
    assert record["rows"] == 7 and record["observations"] == 7
    assert record["rows_by_model"] == {"a": 7} and record["variants"] == ["p3"]
    assert payload["excluded"]["items_excluded"] == 0
    # p3 never reaches the item means: model a's final score averages p1 and p2 only
    final = {row["model"]: row["score"] for row in payload["final"]["models"]}
    expected_a = sum(score(0, k, v) for k in range(40) for v in (1, 2)) / 80
    assert final["a"] == pytest.approx(expected_a)
    # the same record as the fixed-sample ranking's
    rank_out = tmp_path / "rank.json"
    assert main(["rank", str(path), "--format", "json", "-o", str(rank_out)]) == 0
    assert json.loads(rank_out.read_text())["excluded"]["inconsistent_prompts"] == record
    capsys.readouterr()
    assert main(["monitor", str(path)]) == 0
    text = capsys.readouterr().out
    assert "excluded when the table was read: 7 rows of 1 prompt variants that not every" in text
    # the Python replay carries it too
    run = replay(rankci.read_scores(path, prompt="prompt"))
    assert run.excluded["inconsistent_prompts"] == record
