"""HELM runs told apart (issue 26): the evaluation split per scenario (a scenario HELM reports
on ``valid``, like HellaSwag, beside ones on ``test``), the train trials (``trials=``,
``--trials``) and the perturbations' settings.

The fixtures in tests/fixtures/helm_identity/runs were written by crfm-helm 0.5.16 itself
(PROVENANCE.md there); expected values come from HELM's stats.json and per_instance_stats.json.
"""

import json
import warnings
from pathlib import Path

import pytest

import rankci
from rankci.adapters import read_helm
from rankci.cli import main

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "helm_identity" / "runs"


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_helm(*args, **kwargs)


def read_warning(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", rankci.RankciWarning)
        scores = read_helm(*args, **kwargs)
    return scores, [str(w.message) for w in caught]


def helm_mean(run_dir: Path, split: str) -> float:
    for stat in json.loads((run_dir / "stats.json").read_text()):
        if stat["name"] == {"name": "exact_match", "split": split}:
            return stat["mean"]
    raise AssertionError(f"no exact_match on {split} in {run_dir}")


def raw_values(run_dir: Path, trial: int | None = None) -> list[float]:
    """exact_match of the unperturbed entries, straight from per_instance_stats.json."""
    out = []
    for entry in json.loads((run_dir / "per_instance_stats.json").read_text()):
        if entry.get("perturbation") or (trial is not None and entry["train_trial_index"] != trial):
            continue
        for stat in entry["stats"]:
            if stat["name"]["name"] == "exact_match" and not stat["name"].get("perturbation"):
                out.append(stat["mean"])
    return out


def model_of(run_dir: Path) -> str:
    return json.loads((run_dir / "run_spec.json").read_text())["adapter_spec"]["model"]


def test_a_valid_only_scenario_is_read_on_valid_beside_test_scenarios():
    scores = read(RUNS / "splits")
    assert scores.notes["split"] == {"rankci_valid_mcqa": "valid", "simple_mcqa": "test"}
    assert scores.clusters == ("rankci_valid_mcqa", "simple_mcqa")
    frame = scores.to_frame()
    for run_dir in sorted((RUNS / "splits").iterdir()):
        scenario = run_dir.name.split(":")[0]
        split = "valid" if scenario == "rankci_valid_mcqa" else "test"
        mine = frame[(frame["model"] == model_of(run_dir)) & (frame["cluster"] == scenario)]
        assert len(mine) == 20
        assert mine["score"].mean() == pytest.approx(helm_mean(run_dir, split), abs=1e-12)


def test_the_command_line_reads_the_valid_only_run_and_names_its_split(capsys):
    assert main(["rank", str(RUNS / "splits"), "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "split valid for rankci_valid_mcqa (not every run of it has a test split)" in err
    # --split forces one split for every scenario
    assert main(["rank", str(RUNS / "splits"), "--split", "test"]) == 2
    assert "choose one with --split valid" in capsys.readouterr().err
    assert main(["rank", str(RUNS / "splits"), "--split", "valid", "--tasks", "rankci*"]) == 0
    assert "split valid for rankci_valid_mcqa (--split)" in capsys.readouterr().err


def test_runs_of_one_scenario_on_different_splits_are_refused(tmp_path):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(RUNS / "splits", runs)
    # mock/medium's valid-only run, renamed into simple_mcqa: its runs no longer share a split
    source = runs / "rankci_valid_mcqa:model=mock_medium"
    spec = json.loads((source / "run_spec.json").read_text())
    spec["name"] = "simple_mcqa:model=mock_medium"
    shutil.rmtree(runs / "simple_mcqa:model=mock_medium")
    (source / "run_spec.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="scenario 'simple_mcqa' has no test split in every run"):
        read(runs)


def test_a_trial_one_model_lacks_is_named_not_dropped_silently():
    scores, messages = read_warning(RUNS / "trials")
    assert scores.notes["trials"] == "all"
    assert scores.notes["trials_lacking"] == {"trial1": ["mock/medium", "mock/weak"]}
    lacking = "trial1 is lacking from the runs of 'mock/medium', 'mock/weak'"
    assert any(lacking in m for m in messages)
    assert scores.notes["excluded"]["inconsistent_prompts"]["variants"] == ["trial1"]


@pytest.mark.parametrize("rule", ["first", "common", "mean"])
def test_the_trial_rules(rule):
    scores = read(RUNS / "trials", trials=rule)
    assert scores.prompts is None and scores.n_items == 20
    assert "excluded" not in scores.notes
    frame = scores.to_frame()
    for run_dir in sorted((RUNS / "trials").iterdir()):
        mine = frame.loc[frame["model"] == model_of(run_dir), "score"]
        if rule == "mean":  # HELM's stats.json averages the trials
            assert mine.mean() == pytest.approx(helm_mean(run_dir, "test"), abs=1e-12)
        else:
            values = raw_values(run_dir, trial=0)
            assert mine.mean() == pytest.approx(sum(values) / len(values), abs=1e-12)
    if rule == "mean":
        assert scores.notes["trials_averaged"]["mock/strong/simple_mcqa"] == 2
    else:
        assert scores.notes["trials_set_aside"] == {"mock/strong/simple_mcqa": [1]}


def test_trials_on_the_command_line(capsys):
    assert main(["rank", str(RUNS / "trials"), "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "trials some models lack, left out for every model: trial1" in err
    assert "--trials first reads trial 0 only" in err
    assert main(["rank", str(RUNS / "trials"), "--trials", "common", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "trials set aside (--trials common): mock/strong/simple_mcqa: 1" in err
    with pytest.raises(SystemExit):
        main(["rank", str(RUNS / "splits"), "--trials", "lots"])
    assert "invalid choice: 'lots'" in capsys.readouterr().err
    assert main(["rank", str(RUNS / "../../lm_eval/logs"), "--trials", "first"]) == 2
    assert "--trials applies to HELM logs" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown trials 'lots'"):
        read(RUNS / "trials", trials="lots")


def test_two_strengths_of_one_perturbation_are_different_variants():
    scores = read(RUNS / "typos", perturbations=True)
    excluded = scores.notes["excluded"]["inconsistent_prompts"]
    assert excluded["variants"] == ["typos(prob=0.1)", "typos(prob=0.3)"]
    assert scores.prompts == ("original",)
    # each variant's mean is HELM's own aggregate of that perturbation
    for run_dir in sorted((RUNS / "typos").iterdir()):
        alone = read(run_dir, perturbations=True, as_frame=True)
        ((label, group),) = [(k, g) for k, g in alone.groupby("prompt") if k != "original"]
        prob = float(label.split("=")[1].rstrip(")"))
        for stat in json.loads((run_dir / "stats.json").read_text()):
            p = stat["name"].get("perturbation") or {}
            if (
                stat["name"]["name"] == "exact_match"
                and p.get("prob") == prob
                and p.get("computed_on") == "perturbed"
            ):
                assert group["score"].mean() == pytest.approx(stat["mean"], abs=1e-12)
                break
        else:
            raise AssertionError("no perturbed exact_match in stats.json")


def test_the_html_report_names_the_trial_some_models_lack(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(RUNS / "trials"), "-o", str(out)]) == 0
    page = out.read_text()
    assert "Trials some models lack, left out for every model: trial1" in page


def test_a_scenario_a_model_never_ran_is_said(tmp_path, capsys):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(RUNS / "splits", runs)
    weak = "simple_mcqa:model=mock_weak"
    shutil.copytree(RUNS / "trials" / weak, runs / weak)
    scores, messages = read_warning(runs, tasks=["rankci_valid_mcqa"])
    assert scores.models == ("mock/medium", "mock/strong")
    assert scores.notes["tasks_not_run"] == {"mock/weak": ["rankci_valid_mcqa"]}
    assert any("'mock/weak'" in m and "never ran 'rankci_valid_mcqa'" in m for m in messages)
    assert main(["rank", str(runs), "--tasks", "rankci_valid_mcqa", "--format", "json"]) == 0
    assert "tasks a model never ran: mock/weak: rankci_valid_mcqa" in capsys.readouterr().err
