"""HELM suites as people have them (issue 15): the split, scenarios that take their dataset in
the run name, several datasets of one scenario in one suite, task selection, one model's runs.

The runs in tests/fixtures/helm_variants are written in helm-run's layout (README.md there); the
reader is checked against each run's stats.json, HELM's per-split aggregate.
"""

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import rankci
from rankci.adapters import read_helm
from rankci.cli import main

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "helm_variants" / "runs"
MODELS = ("mock/other", "openai/gpt2")


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_helm(*args, **kwargs)


def helm_mean(run_dir: Path, split: str, metric: str = "exact_match") -> float:
    for stat in json.loads((run_dir / "stats.json").read_text()):
        if stat["name"] == {"name": metric, "split": split}:
            return stat["mean"]
    raise AssertionError(f"no {metric} on {split} in {run_dir}")


def scenario_of(run_dir: Path) -> str:
    name = json.loads((run_dir / "run_spec.json").read_text())["name"]
    benchmark, _, args = name.partition(":")
    kept = [a for a in args.split(",") if a.split("=")[0] in ("subject", "dataset")]
    return benchmark + ":" + ",".join(sorted(kept))


@pytest.mark.parametrize("split", ["test", "valid"])
def test_one_split_is_read_and_its_means_equal_helms(split):
    scores = read(RUNS, split=split, tasks=["mmlu"] if split == "valid" else None)
    assert scores.models == MODELS
    assert set(scores.notes["split"].values()) == {split}  # scenario -> split read
    frame = scores.to_frame()
    for run_dir in sorted((RUNS / "v1").iterdir()):
        if split == "valid" and "mmlu" not in run_dir.name:
            continue
        model = json.loads((run_dir / "run_spec.json").read_text())["adapter_spec"]["model"]
        mine = frame.loc[(frame["model"] == model) & (frame["cluster"] == scenario_of(run_dir))]
        assert mine["score"].mean() == pytest.approx(helm_mean(run_dir, split), abs=1e-12)
    if split == "test":  # the valid instance is counted, not pooled
        assert scores.notes["other_split_instances"] == {
            f"{m}/mmlu:subject=philosophy": 1 for m in MODELS
        }


def test_a_split_a_run_lacks_is_an_error_naming_the_splits_it_has():
    with pytest.raises(ValueError, match="on split 'valid'; its instances are on split 'test'"):
        read(RUNS, split="valid")


def test_scenarios_keep_their_dataset_and_several_datasets_of_one_scenario_are_read():
    scores = read(RUNS, cluster="scenario")
    assert scores.clusters == (
        "commonsense:dataset=hellaswag",
        "commonsense:dataset=openbookqa",
        "mmlu:subject=philosophy",
    )
    assert scores.n_items == 6 + 6 + 9
    assert read(RUNS, cluster="benchmark").clusters == ("commonsense", "mmlu")
    assert read(RUNS, tasks=["commonsense"]).n_items == 12
    assert read(RUNS, tasks=["*openbookqa"], exclude_tasks=None).n_items == 6
    assert read(RUNS, exclude_tasks=["commonsense"]).n_items == 9


def test_one_models_runs_load_as_a_table():
    one = read(str(RUNS / "v1" / "*model=openai_gpt2"), as_frame=True)
    assert set(one["model"]) == {"openai/gpt2"} and len(one) == 21
    with pytest.raises(ValueError, match="only one model, 'openai/gpt2'"):
        read(str(RUNS / "v1" / "*model=openai_gpt2"))
    other = read(str(RUNS / "v1" / "*model=mock_other"), as_frame=True)
    combined = rankci.read_scores(pd.concat([one, other]), cluster="cluster")

    def rows(scores):
        return sorted(map(tuple, scores.to_frame().astype(str).values.tolist()))

    assert rows(combined) == rows(read(RUNS))


def test_split_and_tasks_on_the_command_line(capsys):
    assert main(["rank", str(RUNS), "--split", "valid", "--tasks", "mmlu", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["n_units"] == 1
    assert main(["rank", str(RUNS), "--split", "valid"]) == 2
    assert "choose one with --split test" in capsys.readouterr().err
    assert main(["rank", str(RUNS), "--filter", "strict"]) == 2
    assert "--filter applies to lm-eval logs" in capsys.readouterr().err
