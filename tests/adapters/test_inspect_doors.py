"""Which Inspect runs go together (issue 26): run identity, unscored reruns, time zones, a stray
.json file, mixed epochs.

Every log here is written by a real Inspect run with mockllm models. Where the harness cannot
produce the case itself, a real log is changed and written back by Inspect's own writer
(``write_eval_log``: the creation time with a time-zone offset, which 0.3.285 always writes in
UTC), or, for the file that is not an Inspect log at all, written by hand.
"""

import json
import warnings
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

import rankci  # noqa: E402
from rankci.adapters import read_inspect  # noqa: E402
from rankci.cli import main  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
N = 12
LM_EVAL = Path(__file__).parents[1] / "fixtures" / "lm_eval"


@task
def quiz(subset: str = "easy"):
    """Two subsets of different questions whose sample ids are both 0, ..., N - 1."""
    offset = 0 if subset == "easy" else 100
    samples = [Sample(input=f"Question {i + offset}", target="yes", id=i) for i in range(N)]
    return Task(
        dataset=MemoryDataset(samples, name=f"quiz-{subset}"),
        solver=generate(),
        scorer=match(),
    )


def mock(name: str, right):
    """mockllm/<name> answering question q correctly when right(q)."""

    def outputs(messages, tools, tool_choice, config):
        q = int(messages[-1].text.split()[-1])
        out = ModelOutput.from_content(model=name, content="yes" if right(q) else "no")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model(f"mockllm/{name}", custom_outputs=outputs)


# "a" is strong on the easy questions (q < 100) and weak on the hard ones; "b" the reverse
SKILLS = {
    "a": lambda q: (q < 100 and q % 6 != 0) or (q >= 100 and q % 4 == 0),
    "b": lambda q: (q < 100 and q % 3 == 0) or (q >= 100 and q % 6 != 0),
    "c": lambda q: q % 2 == 0,
}


def run(log_dir, name, the_task, **options):
    (log,) = eval(
        the_task, model=mock(name, SKILLS[name]), log_dir=str(log_dir), display="none", **options
    )
    assert log.status == "success"
    return log


def accuracy(log) -> float:
    """Inspect's own accuracy of a log."""
    return read_eval_log(log.location).results.scores[0].metrics["accuracy"].value


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_inspect(*args, **kwargs)


def model_mean(scores, model, cluster=None):
    frame = scores.to_frame()
    keep = frame["model"] == model
    if cluster is not None:
        keep &= frame["cluster"] == cluster
    return frame.loc[keep, "score"].mean()


# ------------------------------------------------------------------ identity: task arguments
def test_runs_with_different_task_arguments_are_separate_tasks(tmp_path, capsys):
    logs = {
        (name, subset): run(tmp_path, name, quiz(subset=subset))
        for name in ("a", "b")
        for subset in ("easy", "hard")
    }
    with pytest.warns(rankci.RankciWarning, match="task 'quiz' was run with different settings"):
        scores = read_inspect(tmp_path)
    easy, hard = "quiz[subset=easy]", "quiz[subset=hard]"
    assert scores.clusters == (easy, hard)
    assert scores.n_items == 2 * N  # quiz[subset=easy]/0 and quiz[subset=hard]/0 are two items
    assert "set_aside" not in scores.notes  # neither subset is a retry of the other
    assert set(scores.notes["task_variants"]["quiz"]) == {easy, hard}
    assert scores.notes["task_variants"]["quiz"][easy]["task_args"] == {"subset": "easy"}
    for (name, subset), log in logs.items():  # every mean is Inspect's own accuracy
        label = f"quiz[subset={subset}]"
        assert model_mean(scores, f"mockllm/{name}", label) == pytest.approx(accuracy(log))
    assert scores.notes["missing"]["items_missing_by_model"] == {}
    # --tasks takes the task's name (every variant) or a variant's label
    assert quiet(tmp_path, tasks="quiz").n_items == 2 * N
    assert quiet(tmp_path, tasks=easy).clusters == (easy,)
    # on the command line: the reading summary names the variants
    assert main(["rank", str(tmp_path), "--from", "inspect"]) == 0
    err = capsys.readouterr().err
    assert "tasks told apart by their settings (never paired): " + f"{easy}, {hard}" in err
    assert "logs set aside" not in err
    assert main(["rank", str(tmp_path), "--tasks", hard]) == 0
    assert f"read {tmp_path}: 2 models, {N} items, 1 clusters" in capsys.readouterr().err
    # and they are separate benchmarks
    out = tmp_path / "benchmarks.json"
    assert main(["benchmarks", str(tmp_path), "--format", "json", "-o", str(out)]) == 0
    assert {easy, hard} <= set(json.loads(out.read_text())["benchmarks"])


def test_runs_of_one_task_on_different_datasets_are_separate_tasks(tmp_path):
    def named(dataset):
        samples = [Sample(input=f"Question {i}", target="yes", id=i) for i in range(N)]
        return Task(
            dataset=MemoryDataset(samples, name=dataset),
            solver=generate(),
            scorer=match(),
            name="quiz",
        )

    for name in ("a", "b"):
        run(tmp_path, name, named("first"))
        run(tmp_path, name, named("second"))
    scores = quiet(tmp_path)
    assert scores.clusters == ("quiz[dataset=first]", "quiz[dataset=second]")
    assert scores.n_items == 2 * N and "set_aside" not in scores.notes


# ------------------------------------------------------------------ retries
def test_a_newer_log_without_scores_never_replaces_a_scored_one(tmp_path, capsys):
    scored = run(tmp_path, "a", quiz())
    run(tmp_path, "b", quiz())
    unscored = run(tmp_path, "a", quiz(), score=False)  # the newer run of the same task
    assert read_eval_log(unscored.location).samples[0].scores in (None, {})
    with pytest.warns(rankci.RankciWarning, match="whose samples carry none"):
        scores = read_inspect(tmp_path)
    assert scores.models == ("mockllm/a", "mockllm/b")
    assert model_mean(scores, "mockllm/a") == pytest.approx(accuracy(scored))
    (aside,) = scores.notes["set_aside"]
    assert aside["path"] == unscored.location and aside["scored"] is False
    # the unscored run came second; "newer" when its eval.created is a later instant (two runs
    # within the clock's resolution have the same one)
    created = [
        datetime.fromisoformat(read_eval_log(log.location).eval.created)
        for log in (scored, unscored)
    ]
    newer = "a newer one" if created[1] > created[0] else "one"
    assert f"a log whose samples carry scores is preferred over {newer} whose" in aside["reason"]
    assert main(["rank", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    name = unscored.location.rsplit("/", 1)[-1]
    assert f"logs set aside: 1 (1 whose samples carry no score, for a scored log: {name})" in err


def test_the_newest_log_is_chosen_by_instant_not_by_text(tmp_path):
    run(tmp_path, "b", quiz())
    first = read_eval_log(run(tmp_path / "runs", "a", quiz()).location)
    second = read_eval_log(run(tmp_path / "runs", "c", quiz()).location)
    second.eval.model = first.eval.model  # a rerun of model a that answers as c does
    # 08:30 UTC written in UTC+2, then 09:00 UTC: as text the older one sorts last
    first.eval.created = "2026-01-01T10:30:00+02:00"
    second.eval.created = "2026-01-01T09:00:00+00:00"
    write_eval_log(first, str(tmp_path / "older.eval"))
    write_eval_log(second, str(tmp_path / "newer.eval"))
    scores = quiet([tmp_path / "older.eval", tmp_path / "newer.eval", *tmp_path.glob("2*.eval")])
    (aside,) = scores.notes["set_aside"]
    assert aside["path"].endswith("older.eval") and aside["reason"] == "the newest log is read"
    expected = sum(SKILLS["c"](q) for q in range(N)) / N
    assert model_mean(scores, "mockllm/a") == pytest.approx(expected)


# ------------------------------------------------------------------ a stray .json file
def test_an_unrelated_json_file_in_the_directory_is_skipped_and_named(tmp_path, capsys):
    run(tmp_path, "a", quiz())
    run(tmp_path, "b", quiz())
    stray = tmp_path / "metrics.json"  # another tool's file that happens to look like a log
    stray.write_text(json.dumps({"version": "1.2", "eval": {"loss": 0.31, "steps": 200}}))
    with pytest.warns(rankci.RankciWarning, match="skipped .*metrics.json.*not an Inspect log"):
        scores = read_inspect(tmp_path)
    assert scores.n_items == N and scores.models == ("mockllm/a", "mockllm/b")
    assert list(scores.notes["files_skipped"]) == [str(stray.resolve())]
    assert main(["rank", str(tmp_path)]) == 0
    assert "files skipped (not Inspect logs): " + str(stray.resolve()) in capsys.readouterr().err
    with pytest.raises(ValueError, match="metrics.json' is not an Inspect log"):
        read_inspect(stray)  # named on its own, it is an error


# ------------------------------------------------------------------ epochs
def test_mixed_epochs_are_said_and_the_cli_offers_the_readers_epoch_rules(tmp_path, capsys):
    run(tmp_path, "a", quiz())
    run(tmp_path, "b", quiz())
    two = run(tmp_path, "c", quiz(), epochs=2)
    with pytest.warns(rankci.RankciWarning, match="different numbers of epochs.*epochs='mean'"):
        scores = read_inspect(tmp_path)
    assert scores.notes["epochs_differ"] == {
        "quiz": {"mockllm/a": 1, "mockllm/b": 1, "mockllm/c": 2}
    }
    # the default reads epochs as prompt variants: epoch 2 is left out for every model, counted
    assert main(["rank", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "epochs differ between models (quiz: mockllm/a 1, mockllm/b 1, mockllm/c 2)" in err
    assert "--epochs mean averages each item's epochs" in err
    assert f"rows excluded: {N} (prompt variants that not every model has)" in err
    assert "rankci: warning: " in err and "--epochs mean averages each item's epochs" in err
    # --epochs mean: each item's epochs averaged while reading, nothing left out
    out = tmp_path / "scores.json"
    assert (
        main(["scores", str(tmp_path), "--epochs", "mean", "--format", "json", "-o", str(out)]) == 0
    )
    err = capsys.readouterr().err
    assert f"read {tmp_path}: 3 models, {N} items, 1 clusters, {3 * N} scores" in err
    assert "rows excluded: none" in err
    assert "epochs averaged per item (--epochs mean; quiz: mockllm/a 1, mockllm/b 1, " in err
    averaged = quiet(tmp_path, epochs="mean")
    assert model_mean(averaged, "mockllm/c") == pytest.approx(accuracy(two))
    # the flag is refused where it does not apply, in the command line's words
    table = tmp_path / "table.csv"
    averaged.to_frame().to_csv(table, index=False)
    assert main(["rank", str(table), "--epochs", "mean"]) == 2
    assert "--epochs applies to evaluation logs" in capsys.readouterr().err
    assert main(["rank", str(LM_EVAL), "--epochs", "mean"]) == 2
    assert "--epochs applies to Inspect logs, not to lm-eval logs" in capsys.readouterr().err


def test_runs_scored_with_other_scorer_options_are_separate_tasks(tmp_path):
    def scored(location):
        samples = [Sample(input=f"Question {i}", target="yes", id=i) for i in range(N)]
        return Task(
            dataset=MemoryDataset(samples),
            solver=generate(),
            scorer=match(location=location),
            name="quiz",
        )

    for name in ("a", "b"):
        run(tmp_path, name, scored("end"))
        run(tmp_path, name, scored("begin"))
    scores = quiet(tmp_path)
    assert scores.clusters == (
        "quiz[scorer=match(location=begin)]",
        "quiz[scorer=match(location=end)]",
    )
    assert scores.n_items == 2 * N and "set_aside" not in scores.notes
