"""The real lm-evaluation-harness 0.4.2 output (tests/fixtures/lm_eval_v042, PROVENANCE.md there).

Written by lm-eval 0.4.2 itself with its ``dummy`` model (three runs, three seeds, one with
``--limit 25``): ``results.json`` beside ``<model_args>_<task>.jsonl`` JSON arrays, one block of
lines per filter for a task with several filters. rankci's per-model means must equal the
harness's own ``results.json``, task by task, filter by filter and for the group; the cells must
be what the dummy model answers (it always generates ``"lol"``), read from the task's own data.
"""

import json
import warnings
from pathlib import Path

import pytest

import rankci
from rankci.adapters import detect_format, read_lm_eval
from rankci.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROOT = FIXTURES / "lm_eval_v042" / "logs"
DATA = FIXTURES / "lm_eval" / "tasks"
MODELS = ("model-a", "model-b", "model-c")
FILTERS = ("strict", "first-letter")


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_lm_eval(*args, **kwargs)


def harness(model: str) -> dict:
    return json.loads((ROOT / model / "results.json").read_text())


def frame_of(scores):
    frame = scores.to_frame()
    frame["task"] = frame["item"].str.split("/").str[0]
    return frame


def test_the_fixture_is_lm_eval_0_4_2_output():
    for model in MODELS:
        results = harness(model)
        assert results["config"]["model"] == "dummy"
        assert results["config"]["model_args"] == f"pretrained={model}"
        assert results["group_subtasks"]["toy_mc"] == ["toy_arith", "toy_capitals"]
        names = sorted(p.name for p in (ROOT / model).iterdir())
        prefix = f"pretrained__{model}"
        assert names == [f"{prefix}_toy_{t}.jsonl" for t in ("arith", "capitals", "echo")] + [
            "results.json"
        ]
        assert isinstance(json.loads((ROOT / model / f"{prefix}_toy_echo.jsonl").read_text()), list)
    assert detect_format(ROOT) == "lm-eval"


@pytest.mark.parametrize("filter", FILTERS)
def test_per_model_means_equal_the_harness_results(filter):
    scores = read(ROOT, filter=filter)
    assert scores.models == MODELS
    assert scores.notes["log_layout"] == ["results.json + <model_args>_<task>.jsonl"]
    assert scores.notes["filter"]["toy_echo"] == filter
    means = frame_of(scores).groupby(["model", "task"])["score"].agg(["mean", "size"])
    for model in MODELS:
        results = harness(model)["results"]
        for task in ("toy_arith", "toy_capitals"):
            assert means.loc[(model, task), "mean"] == pytest.approx(results[task]["acc,none"])
        echo = results["toy_echo"][f"exact_match,{filter}"]
        assert means.loc[(model, "toy_echo"), "mean"] == pytest.approx(echo)
    # --limit 25: model-c has the first 25 of the 30 toy_arith documents, the others all 30
    assert means.loc[("model-c", "toy_arith"), "size"] == 25
    assert means.loc[("model-a", "toy_arith"), "size"] == 30


def test_group_means_equal_the_harness_group_aggregate():
    scores = read(ROOT, filter="strict", cluster="group")
    assert scores.clusters == ("toy_echo", "toy_mc")
    means = scores.to_frame().groupby(["model", "cluster"])["score"].mean()
    for model in MODELS:
        groups = harness(model)["groups"]
        assert means[(model, "toy_mc")] == pytest.approx(groups["toy_mc"]["acc,none"])
    chosen = read(ROOT, tasks=["toy_mc"])
    assert chosen.clusters == ("toy_arith", "toy_capitals")


@pytest.mark.parametrize("filter, answer", [("strict", "lol"), ("first-letter", "l")])
def test_each_cell_is_what_the_dummy_model_answers(filter, answer):
    """The dummy generates "lol": exact match under ``strict`` where the target is "lol", and
    under ``first-letter`` (the first letter, "l") where it is "l", from the task's own data."""
    docs = [json.loads(line) for line in (DATA / "echo.jsonl").read_text().splitlines()]
    expected = {f"toy_echo/{k}": float(doc["target"] == answer) for k, doc in enumerate(docs)}
    assert 0 < sum(expected.values()) < len(expected)  # the check can tell the filters apart
    frame = frame_of(read(ROOT, filter=filter, tasks=["toy_echo"]))
    for model in MODELS:
        mine = frame[frame["model"] == model].set_index("item")["score"].to_dict()
        assert mine == expected


def test_the_hand_written_variant_has_the_real_line_layout():
    """tests/fixtures/lm_eval_variants/v0.4.2 (rewritten from 0.4.13 lines) keeps the keys and the
    ``arguments`` form of the real 0.4.2 lines."""
    variant = FIXTURES / "lm_eval_variants" / "v0.4.2" / "model-a"
    for task in ("toy_capitals", "toy_echo"):
        name = f"pretrained__model-a_{task}.jsonl"
        real = json.loads((ROOT / "model-a" / name).read_text())
        written = json.loads((variant / name).read_text())
        assert [sorted(line) for line in written] == [sorted(real[0])] * len(written)
        assert all(isinstance(line["arguments"], list) for line in written)
        assert {type(a).__name__ for line in real for a in line["arguments"]} == {"list"}
        assert {type(a).__name__ for line in written for a in line["arguments"]} == {"list"}


def test_the_command_line_ranks_the_0_4_2_output(tmp_path, capsys):
    out = tmp_path / "rank.json"
    assert main(["rank", str(ROOT), "--filter", "strict", "--format", "json", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "3 models, 65 items, 3 clusters" in err
    rows = {row["model"]: row["score"] for row in json.loads(out.read_text())["models"]}
    # --missing complete: the 60 items every model has (model-c lacks toy_arith 25-29), read
    # straight from the harness's lines (strict: the first of toy_echo's two blocks of 15)
    for model in MODELS:
        lines = {
            task: json.loads((ROOT / model / f"pretrained__{model}_{task}.jsonl").read_text())
            for task in ("toy_arith", "toy_capitals", "toy_echo")
        }
        values = [r["acc"] for r in lines["toy_arith"] if r["doc_id"] < 25]
        values += [r["acc"] for r in lines["toy_capitals"]]
        values += [r["exact_match"] for r in lines["toy_echo"][:15]]
        assert len(values) == 60 and rows[model] == pytest.approx(sum(values) / 60)
