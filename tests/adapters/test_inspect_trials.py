"""Inspect epochs read as repeated trials (``epochs="trial"``, ``--epochs trial``): real Inspect
runs with mockllm models whose answers change from call to call, so the epochs of an item
disagree; the expected pass@k / pass^k come from the logs as Inspect reads them
(``read_eval_log``) and a brute-force enumeration of k-subsets."""

import itertools
import json
import warnings

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

import rankci  # noqa: E402
from rankci.adapters import read_inspect  # noqa: E402
from rankci.cli import main  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
N = 8


@task
def quiz():
    samples = [Sample(input=f"Question {i}", target="yes", id=i) for i in range(N)]
    return Task(dataset=MemoryDataset(samples, name="quiz"), solver=generate(), scorer=match())


def flaky(name: str, period: int):
    """mockllm/<name>: right on question q at its c-th call when (q + c) % period != 0."""
    calls = {"n": 0}

    def outputs(messages, tools, tool_choice, config):
        q = int(messages[-1].text.split()[-1])
        calls["n"] += 1
        right = (q + calls["n"]) % period != 0
        out = ModelOutput.from_content(model=name, content="yes" if right else "no")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model(f"mockllm/{name}", custom_outputs=outputs)


def run(log_dir, name, period, epochs):
    (log,) = eval(
        quiz(), model=flaky(name, period), log_dir=str(log_dir), display="none", epochs=epochs
    )
    assert log.status == "success"
    return log


def outcomes(log) -> dict:
    """{item: [0/1 per epoch]} as Inspect reads its own log."""
    found: dict = {}
    for sample in read_eval_log(log.location).samples:
        value = next(iter(sample.scores.values())).value
        found.setdefault(str(sample.id), []).append(1 if value == "C" else 0)
    return found


def enumerate_k(trials: list[int], k: int) -> tuple[float, float]:
    subsets = list(itertools.combinations(trials, k))
    return (
        sum(any(s) for s in subsets) / len(subsets),
        sum(all(s) for s in subsets) / len(subsets),
    )


def test_epochs_as_trials_give_pass_at_k_and_pass_hat_k_per_item(tmp_path, capsys):
    logs = {
        "mockllm/a": run(tmp_path, "a", 3, epochs=4),
        "mockllm/b": run(tmp_path, "b", 2, epochs=4),
        "mockllm/c": run(tmp_path, "c", 5, epochs=3),  # fewer epochs: unequal trial counts
    }
    with pytest.warns(rankci.RankciWarning, match="trials per item differ.*mockllm/c 3-3"):
        scores = read_inspect(tmp_path, epochs="trial")
    record = scores.notes["repeated_trials"]
    assert record["trials_per_item"] == [3, 4] and record["unequal"] is True
    assert record["trials_by_model"]["mockllm/c"] == [3, 3]
    assert scores.prompts is None and scores.n_rows == 3 * N  # one score per (model, item)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        for rule, pick in (("pass@2", 0), ("pass^2", 1), ("pass@3", 0), ("pass^3", 1)):
            k = int(rule[-1])
            got = scores.per_item(rule).to_frame()
            got = {(r.model, r.item.split("/")[-1]): r.score for r in got.itertuples()}
            for model, log in logs.items():
                for item, trials in outcomes(log).items():
                    expected = enumerate_k(trials, k)[pick]
                    assert got[(model, item)] == pytest.approx(expected), (rule, model, item)
    # some item's epochs disagree (the case trials are for)
    assert any(len(set(t)) > 1 for t in outcomes(logs["mockllm/a"]).values())

    # the command line: --epochs trial --per-item pass^3, the summary says what was read
    out = tmp_path / "s.json"
    args = ["scores", str(tmp_path), "--epochs", "trial", "--per-item", "pass^3"]
    assert main([*args, "--format", "json", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{4 * N * 2 + 3 * N} trials (3-4 (unequal; mockllm/a 4-4" in err
    assert "per-item score: pass^3" in err
    payload = json.loads(out.read_text())
    split = {row["model"]: row for row in payload["trial_variance"]}
    assert split["mockllm/c"]["trials"] == 3 * N and split["mockllm/a"]["trials"] == 4 * N
    # pass@4 needs four epochs, and model c ran three: refused, naming the model
    assert main(["rank", str(tmp_path), "--epochs", "trial", "--per-item", "pass@4"]) == 2
    err = capsys.readouterr().err
    assert "--per-item 'pass@4' needs at least 4 trials per item" in err
    assert "models: 'mockllm/c'" in err
    # --per-item pass@K without trials says how to get them
    assert main(["rank", str(tmp_path), "--per-item", "pass@2"]) == 2
    assert "--epochs trial" in capsys.readouterr().err
