"""Inspect logs as people have them (issue 15): logs without samples, a newer cancelled log
beside an older complete one, logs written under early stopping, one model's logs as a table.

Every log here is written by a real Inspect run with mockllm models (or, for the cancelled log, by
Inspect's own writer from a real log), never by hand.
"""

import json
import warnings

import pandas as pd
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


# 6 items after early stopping certify nothing: the subject is the outputs' record
@pytest.mark.filterwarnings("ignore:nothing is certified:rankci.RankciWarning")
def test_early_stopping_reaches_the_ranking_and_every_output(tmp_path, capsys):
    run(tmp_path, "model", early_stopping=StopAfter(6))
    run(tmp_path, "other", early_stopping=StopAfter(6))
    scores = quiet(tmp_path)
    stopped = {"mockllm/model/toy", "mockllm/other/toy"}
    # Python: the Ranking carries the logs and its guarantee says it does not hold
    ranking = rankci.rank(scores, rng=0)
    assert set(ranking.early_stopped) == stopped
    assert ranking.early_stopped["mockllm/other/toy"]["samples_stopped"] == N - 6
    assert "fixed-sample guarantee does not hold" in ranking.guarantee
    assert "rankci monitor" in ranking.guarantee and "early-stopped data" in repr(ranking)
    assert set(ranking.to_dict()["early_stopped"]) == stopped
    # ... and so do per-cluster rankings and the screened ranking, on a board with clusters
    frame = pd.DataFrame(
        [
            (str(m), f"q{i}", f"s{i % 4}", float(i // 4 % 10 < 9 - 3 * m))
            for m in range(4)
            for i in range(160)
        ],
        columns=["model", "item", "cluster", "score"],
    )
    flagged = rankci.Scores.from_frame(frame, cluster="cluster", notes=dict(scores.notes))
    filtered = rankci.rank(flagged, rng=0, filter_uninformative=True, top=1)
    assert set(filtered.early_stopped) == stopped and "does not hold" in filtered.guarantee
    by = rankci.rank_by_cluster(flagged, rng=0)
    assert by.rankings and all(set(r.early_stopped) == stopped for r in by.rankings.values())
    # the same scores without the reader's note: no flag, no key
    plain = rankci.Scores.from_frame(scores.to_frame())
    assert rankci.rank(plain, rng=0).early_stopped == {}
    assert "early_stopped" not in rankci.rank(plain, rng=0).to_dict()

    def output(*argv):
        out = tmp_path / "out.txt"
        assert main([*argv, "-o", str(out)]) in (0, 1)  # check exits 1 when a claim fails
        err = capsys.readouterr().err
        assert "early-stopped logs: fixed-sample guarantees do not hold" in err  # the summary
        return out.read_text()

    # rank: a line under the head of the table, the guarantee, and the JSON key
    table = output("rank", str(tmp_path))
    assert table.splitlines()[1].startswith("early stopping: these scores come from logs written")
    assert "rankci monitor" in table.splitlines()[1] and "does not hold for them" in table
    payload = json.loads(output("rank", str(tmp_path), "--format", "json"))
    assert set(payload["early_stopped"]) == stopped
    by_cluster = json.loads(output("rank", str(tmp_path), "--by-cluster", "--format", "json"))
    assert all(set(c["early_stopped"]) == stopped for c in by_cluster["clusters"].values())
    # scores and check: a line and a JSON key
    assert "early stopping: these scores come" in output("scores", str(tmp_path))
    payload = json.loads(output("scores", str(tmp_path), "--format", "json"))
    assert set(payload["early_stopped"]) == stopped
    claim = ["check", str(tmp_path), "--claim", "'mockllm/model' > 'mockllm/other'"]
    assert "early stopping: these scores come" in output(*claim)
    assert set(json.loads(output(*claim, "--format", "json"))["early_stopped"]) == stopped
    assert 'name="early_stopping"' in output(*claim, "--format", "junit")


def test_early_stopping_in_either_run_reaches_check_with_a_baseline(tmp_path, capsys):
    run(tmp_path / "new", "model")
    run(tmp_path / "old", "model", early_stopping=StopAfter(6))
    out = tmp_path / "check.json"
    argv = ["check", str(tmp_path / "new"), "--baseline", str(tmp_path / "old")]
    assert main([*argv, "--format", "json", "-o", str(out)]) in (0, 1)
    assert "early-stopped logs" in capsys.readouterr().err
    assert list(json.loads(out.read_text())["early_stopped"]) == ["mockllm/model/toy (baseline)"]


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
