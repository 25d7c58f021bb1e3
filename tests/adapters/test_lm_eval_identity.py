"""lm-eval runs told apart (issue 26): model_args, num_fewshot and the task hash are part of a
run's identity; superseded runs, missing or cut-down samples files, tasks a model never ran and
groups the harness averages otherwise are said, never silent.

The fixtures in tests/fixtures/lm_eval_identity/logs were written by lm-eval 0.4.13 itself
(PROVENANCE.md there); expected values come from the harness's own results files.
"""

import json
import shutil
import warnings
from pathlib import Path

import pytest

import rankci
from rankci.adapters import read_lm_eval
from rankci.cli import main

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_identity" / "logs"


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_lm_eval(*args, **kwargs)


def read_warning(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", rankci.RankciWarning)
        scores = read_lm_eval(*args, **kwargs)
    return scores, [str(w.message) for w in caught]


def results_files(folder: Path) -> list[tuple[Path, dict]]:
    return [(p, json.loads(p.read_text())) for p in sorted(folder.glob("results_*.json"))]


def task_means(scores) -> dict:
    frame = scores.to_frame()
    frame["task"] = frame["item"].str.rsplit("/", n=1).str[0]
    return frame.groupby(["model", "task"], observed=True)["score"].mean().to_dict()


def test_runs_that_differ_in_model_args_are_separate_models():
    scores, messages = read_warning(LOGS / "revisions")
    assert scores.models == ("other", "pythia (revision=step1)", "pythia (revision=step2)")
    assert "superseded" not in scores.notes
    assert scores.notes["models_told_apart"] == {
        "pythia": ["pythia (revision=step1)", "pythia (revision=step2)"]
    }
    assert any("differ in model_args" in m and "revision=step2" in m for m in messages)
    means = task_means(scores)
    for _, results in results_files(LOGS / "revisions" / "pythia"):
        name = f"pythia (revision={results['config']['model_args']['revision']})"
        for task in ("toy_arith", "toy_capitals", "toy_echo"):
            key = "exact_match,strict" if task == "toy_echo" else "acc,none"
            assert means[(name, task)] == pytest.approx(results["results"][task][key], abs=1e-12)


def test_a_superseded_run_gets_a_warning_line_naming_both_runs(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS / "revisions", logs)
    (old, _), (new, results) = results_files(logs / "pythia")
    results["config"]["model_args"]["revision"] = "step1"  # now one identity, run twice
    results["task_hashes"]["toy_echo"] = "0" * 64  # as if its documents had changed
    new.write_text(json.dumps(results))
    scores, messages = read_warning(logs)
    assert scores.models == ("other", "pythia")
    lines = [m for m in messages if "supersedes" in m]
    assert len(lines) == 1
    assert str(new.resolve()) in lines[0] and str(old.resolve()) in lines[0]
    assert "toy_arith, toy_capitals, toy_echo (task hash differs" in lines[0]
    assert len(scores.notes["superseded"]) == 3


def test_zero_shot_and_three_shot_runs_of_one_task_are_never_pooled():
    scores, messages = read_warning(LOGS / "fewshot")
    assert scores.models == ("other", "shots")
    assert scores.clusters == ("toy_arith:num_fewshot=0", "toy_arith:num_fewshot=3")
    assert "superseded" not in scores.notes
    assert scores.notes["tasks_split_by_fewshot"] == {
        "toy_arith": {"0": ["other", "shots"], "3": ["shots"]}
    }
    assert any("different numbers of few-shot examples" in m for m in messages)
    means = task_means(scores)
    for folder in ("shots", "other"):
        for _, results in results_files(LOGS / "fewshot" / folder):
            shots = results["n-shot"]["toy_arith"]
            expected = results["results"]["toy_arith"]["acc,none"]
            assert means[(folder, f"toy_arith:num_fewshot={shots}")] == pytest.approx(expected)
    # the 3-shot items are not paired with the other model's 0-shot items
    assert scores.notes["missing"]["items_missing_by_model"] == {"other": 30}
    # the task's name selects both, the variant's name one
    assert read(LOGS / "fewshot", tasks=["toy_arith"]).n_items == 60
    zero = read(LOGS / "fewshot", tasks=["toy_arith:num_fewshot=0"])
    assert zero.n_items == 30 and "missing" not in zero.notes["missing"].get("examples", {})


def test_a_macro_averaged_group_says_its_mean_differs_from_the_harness():
    scores = read(LOGS / "macro", cluster="group")
    frame = scores.to_frame()
    differ = {g["model"]: g for g in scores.notes["group_means_differ"]}
    for folder in ("model-a", "model-b"):
        ((_, results),) = results_files(LOGS / "macro" / folder)
        harness = results["groups"]["toy_mc_macro"]["acc,none"]
        subtasks = [results["results"][t]["acc,none"] for t in ("toy_arith", "toy_capitals")]
        assert harness == pytest.approx(sum(subtasks) / 2, abs=1e-12)  # weight_by_size: false
        pooled = frame.loc[frame["model"] == folder, "score"].mean()
        if abs(pooled - harness) > 1e-9:
            record = differ.pop(folder)
            assert record["group"] == "toy_mc_macro"
            assert record["harness"] == pytest.approx(harness, abs=1e-12)
            assert record["mean_of_items"] == pytest.approx(pooled, abs=1e-12)
            assert "weight_by_size: false" in record["harness_weighting"]
    assert differ == {}
    assert scores.notes["group_means_differ"]  # model-b's differ (0.1917 against 0.2)


def test_a_task_without_samples_file_and_a_cut_down_file_are_named(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS / "revisions", logs)
    (_, step1), (_, step2) = results_files(logs / "pythia")  # in date order
    assert [r["config"]["model_args"]["revision"] for r in (step1, step2)] == ["step1", "step2"]
    echo = sorted((logs / "pythia").glob("samples_toy_echo_*.jsonl"))
    echo[1].unlink()  # the step2 run's toy_echo samples
    arith = sorted((logs / "pythia").glob("samples_toy_arith_*.jsonl"))[0]  # step1's
    arith.write_text("\n".join(arith.read_text().splitlines()[:12]) + "\n")
    scores, messages = read_warning(logs)
    assert scores.notes["tasks_without_samples"] == {"pythia (revision=step2)": ["toy_echo"]}
    assert scores.notes["samples_cut_down"] == {
        "pythia (revision=step1)/toy_arith": {"lines": 12, "effective": 30}
    }
    assert any("no samples file" in m and "toy_echo" in m for m in messages)
    assert any("12 of 30" in m for m in messages)


def test_the_reading_summary_names_what_the_runs_lack(tmp_path, capsys):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS / "revisions", logs)
    paths = sorted((logs / "pythia").glob("samples_toy_echo_*.jsonl"))
    paths[1].unlink()
    assert main(["rank", str(logs), "--format", "json"]) == 0
    err = capsys.readouterr().err
    summary = next(line for line in err.splitlines() if line.startswith("rankci: read "))
    assert "tasks without a samples file: pythia (revision=step2): toy_echo" in summary
    assert "models told apart by model_args" in summary


def test_tasks_a_model_never_ran_are_said_not_no_score(capsys):
    scores, messages = read_warning(LOGS / "revisions", tasks=["toy_echo"])
    assert scores.models == ("pythia (revision=step1)", "pythia (revision=step2)")
    assert scores.notes["tasks_not_run"] == {"other": ["toy_echo"]}
    assert any("'other'" in m and "never ran 'toy_echo'" in m for m in messages)
    assert not any("no samples, or none scored" in m for m in messages)
    assert main(["rank", str(LOGS / "revisions"), "--tasks", "toy_echo", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "never ran 'toy_echo'" in err
    assert "tasks a model never ran: other: toy_echo" in err
    # a task the model did run is not listed
    assert "tasks_not_run" not in read(LOGS / "revisions", tasks=["toy_mc"]).notes


def test_macro_group_note_in_the_command_line_summary(capsys):
    assert main(["rank", str(LOGS / "macro"), "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "group means differ from the harness's" in err
    assert "toy_mc_macro for model-b (harness 0.1917, items 0.2)" in err


def test_a_selected_task_listed_without_samples_is_not_called_never_run(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS / "revisions", logs)
    echo = sorted((logs / "pythia").glob("samples_toy_echo_*.jsonl"))
    echo[1].unlink()  # step2's
    table = read(logs, tasks=["toy_echo"], as_frame=True)  # one model left with scores
    assert set(table["model"]) == {"pythia (revision=step1)"}
    notes = table.attrs["notes"]
    assert notes["tasks_without_samples"] == {"pythia (revision=step2)": ["toy_echo"]}
    assert notes["tasks_not_run"] == {"other": ["toy_echo"]}
    assert notes["models_without_scores"] == ["other", "pythia (revision=step2)"]
    echo[0].unlink()  # no samples of toy_echo left, though both results files list it
    with pytest.raises(ValueError, match="task 'toy_echo' has no samples file in the logs"):
        read(logs, tasks=["toy_echo"])
