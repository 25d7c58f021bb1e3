"""Inspect logs as people have them (issue 15): logs without samples, a newer cancelled log
beside an older complete one, logs written under early stopping, one model's logs as a table.

Every log here is written by a real Inspect run with mockllm models (or, for the cancelled log, by
Inspect's own writer from a real log), never by hand.
"""

import warnings

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402
from inspect_ai.util._early_stopping import EarlyStop  # noqa: E402

import rankci  # noqa: E402
from rankci.adapters import read_inspect  # noqa: E402
from rankci.cli import main  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
N = 10


def task(early_stopping=None) -> Task:
    samples = [Sample(input=f"Question {i}", target="yes", id=f"q{i}") for i in range(N)]
    return Task(
        dataset=MemoryDataset(samples),
        solver=generate(),
        scorer=match(),
        name="toy",
        early_stopping=early_stopping,
    )


class StopAfter:
    """An Inspect early-stopping manager that stops every sample after the first ``n``."""

    def __init__(self, n: int):
        self.n = n

    async def start_task(self, task, samples, epochs):
        return "stop-after"

    async def schedule_sample(self, id, epoch):
        if int(str(id)[1:]) >= self.n:
            return EarlyStop(id=id, epoch=epoch, reason="enough")
        return None

    async def complete_sample(self, id, epoch, scores):
        return None

    async def complete_task(self):
        return {"stopped_after": self.n}


SKILL = {"model": 1, "other": 2, "silent": 3}  # answers right on the items i % SKILL == 0


def mock(name: str):
    def outputs(messages, tools, tool_choice, config):
        i = int(messages[-1].text.split()[-1])
        answer = "yes" if i % SKILL[name] == 0 else "no"
        out = ModelOutput.from_content(model=name, content=answer)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model(f"mockllm/{name}", custom_outputs=outputs)


def run(log_dir, model, **options):
    (log,) = eval(
        task(options.pop("early_stopping", None)),
        model=mock(model),
        log_dir=str(log_dir),
        display="none",
        **options,
    )
    assert log.status == "success"
    return log


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_inspect(*args, **kwargs)


def test_a_log_without_samples_is_reported_and_its_model_named(tmp_path):
    run(tmp_path, "model")
    run(tmp_path, "other")
    empty = run(tmp_path, "silent", log_samples=False)
    assert not read_eval_log(empty.location).samples
    with pytest.warns(rankci.RankciWarning) as caught:
        scores = read_inspect(tmp_path)
    text = " ".join(str(w.message) for w in caught)
    assert "without samples" in text and "'mockllm/silent' has no score" in text
    assert scores.models == ("mockllm/model", "mockllm/other")
    assert scores.notes["models_without_scores"] == ["mockllm/silent"]
    assert list(scores.notes["logs_without_samples"].values()) == ["success"]
    frame = scores.to_frame()
    for log in (read_eval_log(p) for p in sorted(tmp_path.glob("*.eval"))):
        if log.samples:  # the per-model mean is Inspect's own accuracy
            accuracy = log.results.scores[0].metrics["accuracy"].value
            mine = frame.loc[frame["model"] == log.eval.model, "score"].mean()
            assert mine == pytest.approx(accuracy)


def test_a_complete_log_is_preferred_over_a_newer_cancelled_one(tmp_path, capsys):
    run(tmp_path, "model")
    complete = run(tmp_path, "other")
    log = read_eval_log(complete.location)
    log.status = "cancelled"
    log.samples = log.samples[:3]
    log.eval.created = "2099-01-01T00:00:00+00:00"
    cancelled = tmp_path / "cancelled.eval"
    write_eval_log(log, str(cancelled))
    with pytest.warns(
        rankci.RankciWarning, match="set aside .*cancelled.eval' \\(cancelled, 3 samples\\)"
    ):
        scores = read_inspect(tmp_path)
    (aside,) = scores.notes["set_aside"]
    assert aside["path"] == str(cancelled.resolve()) and aside["kept_samples"] == N
    assert "completed log is preferred over a newer unfinished one" in aside["reason"]
    frame = scores.to_frame()
    assert (frame["model"] == "mockllm/other").sum() == N
    # on the command line: a warning and the reading summary say so
    assert main(["rank", str(tmp_path), "--from", "inspect"]) == 0
    err = capsys.readouterr().err
    assert "rankci: warning: Inspect logs: set aside" in err and "logs set aside: 1" in err


def test_early_stopped_logs_are_flagged_with_the_anytime_valid_path(tmp_path, capsys):
    run(tmp_path, "model", early_stopping=StopAfter(6))
    run(tmp_path, "other", early_stopping=StopAfter(6))
    with pytest.warns(rankci.RankciWarning, match="early stopping.*do not hold.*rankci monitor"):
        scores = read_inspect(tmp_path)
    assert scores.notes["early_stopped"]["mockllm/model/toy"]["samples_stopped"] == N - 6
    assert scores.n_items == 6
    assert main(["rank", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "early-stopped logs: fixed-sample guarantees do not hold" in err
    out = tmp_path / "report.html"
    assert main(["report", str(tmp_path), "-o", str(out), "--no-omnibus"]) == 0
    assert "<b>Early stopping</b>" in out.read_text() and "rankci monitor" in out.read_text()


def test_one_models_log_loads_as_a_table(tmp_path):
    first = run(tmp_path / "a", "model")
    run(tmp_path / "b", "other")
    with pytest.raises(ValueError, match="only one model, 'mockllm/model'"):
        quiet(tmp_path / "a")
    table = quiet(first.location, as_frame=True)
    assert list(table.columns) == ["model", "item", "cluster", "score"] and len(table) == N
    import pandas as pd

    both = rankci.read_scores(
        pd.concat([table, quiet(tmp_path / "b", as_frame=True)]), cluster="cluster"
    )

    def rows(scores):
        return sorted(map(tuple, scores.to_frame().astype(str).values.tolist()))

    assert rows(both) == rows(quiet(tmp_path))


def test_tasks_select_inspect_logs(tmp_path):
    run(tmp_path, "model")
    run(tmp_path, "other")
    assert quiet(tmp_path, tasks=["to*"]).n_items == N
    with pytest.raises(ValueError, match="task 'quiz' is not in the logs; tasks found: 'toy'"):
        quiet(tmp_path, tasks=["quiz"])


def test_a_git_lfs_pointer_in_place_of_a_log_is_named_as_such(tmp_path):
    (tmp_path / "run.json").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 1234\n"
    )
    with pytest.raises(ValueError, match="run.json' is a Git LFS pointer file"):
        read_inspect(tmp_path)
