"""Reading Inspect AI logs written by a real Inspect run with its mock model (mockllm).

The run happens inside the test: a small local task, three mockllm models whose answers are
planned in advance (so the expected scores are known without Inspect), two epochs, one model whose
generation fails on one sample, one model run on fewer samples.
"""

import json
import warnings
from collections import defaultdict

import numpy as np
import pytest

pytest.importorskip("inspect_ai")  # in the dev extra; the skip only guards a bare install

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import Score, Target, match, mean, scorer, value_to_float  # noqa: E402
from inspect_ai.solver import TaskState, generate  # noqa: E402

import rankci  # noqa: E402
from rankci.adapters import read_inspect  # noqa: E402
from rankci.adapters.inspect import inspect_value_to_float  # noqa: E402

# Inspect's own retry helper warns about a deprecated tenacity argument; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N_ITEMS = 30
SUBJECTS = ("algebra", "biology", "chemistry")
SKILL = {"alpha": 0.85, "beta": 0.5, "gamma": 0.2}
GAMMA_LIMIT = 24
FAILING = ("beta", 5)


@scorer(metrics={"right": [mean()], "half": [mean()]})
def graded():
    async def score(state: TaskState, target: Target):
        right = float(state.output.completion == target.text)
        return Score(value={"right": right, "half": right / 2})

    return score


def mock_model(name: str, plan: np.ndarray):
    """mockllm/<name> answering the k-th request for item i as planned (plan[i, k])."""
    calls = defaultdict(int)

    def outputs(messages, tools, tool_choice, config):
        i = int(messages[-1].text.split()[-1])
        if (name, i) == FAILING:
            raise RuntimeError("planned failure")
        k = calls[i]
        calls[i] += 1
        out = ModelOutput.from_content(model=name, content="yes" if plan[i, k] else "no")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model(f"mockllm/{name}", custom_outputs=outputs)


def make_task() -> Task:
    samples = [
        Sample(
            input=f"Question {i}",
            target="yes",
            id=f"q{i:02d}",
            metadata={"subject": SUBJECTS[i % 3], "qid": f"Q-{i}"},
        )
        for i in range(N_ITEMS)
    ]
    return Task(
        dataset=MemoryDataset(samples),
        solver=generate(),
        scorer=[match(), graded()],
        epochs=2,
        name="toy",
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Real Inspect logs: alpha and beta on all items, gamma on the first GAMMA_LIMIT."""
    log_dir = tmp_path_factory.mktemp("inspect_logs")
    rng = np.random.default_rng(2026)
    plan = {name: rng.random((N_ITEMS, 2)) < p for name, p in SKILL.items()}
    common = dict(log_dir=str(log_dir), display="none", fail_on_error=False)
    logs = eval(make_task(), model=[mock_model(n, plan[n]) for n in ("alpha", "beta")], **common)
    logs += eval(make_task(), model=mock_model("gamma", plan["gamma"]), limit=GAMMA_LIMIT, **common)
    assert [log.status for log in logs] == ["success"] * 3
    json_dir = tmp_path_factory.mktemp("inspect_json")
    for log in logs:  # the same logs in Inspect's .json format, written by Inspect
        full = read_eval_log(log.location)
        write_eval_log(full, str(json_dir / f"{full.eval.model.split('/')[-1]}.json"))
    return {
        "dir": log_dir,
        "json_dir": json_dir,
        "plan": plan,
        "locations": [g.location for g in logs],
    }


def read(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankci.RankciWarning)
        return read_inspect(*args, **kwargs)


def observations(scores: rankci.Scores) -> dict:
    frame = scores.to_frame()
    return {(str(r.model), r.item, str(r.prompt)): r.score for r in frame.itertuples(index=False)}


def test_every_score_equals_inspects_own_reading(run):
    scores = read(run["dir"])
    assert scores.models == ("mockllm/alpha", "mockllm/beta", "mockllm/gamma")
    assert scores.prompts == ("epoch1", "epoch2")
    expected = {}
    for location in run["locations"]:
        log = read_eval_log(location)
        to_float = value_to_float()
        for sample in log.samples:
            if sample.error is None:
                key = (log.eval.model, f"toy/{sample.id}", f"epoch{sample.epoch}")
                expected[key] = to_float(sample.scores["match"].value)
    assert observations(scores) == expected


def test_item_means_equal_the_planned_answers(run):
    scores = read(run["dir"], epochs="mean")
    frame = scores.to_frame()
    for name, plan in run["plan"].items():
        mine = frame[frame["model"] == f"mockllm/{name}"].set_index("item")["score"]
        for i in range(N_ITEMS):
            item = f"toy/q{i:02d}"
            if (name, i) == FAILING or (name == "gamma" and i >= GAMMA_LIMIT):
                assert item not in mine.index
            else:
                assert mine[item] == pytest.approx(plan[i].mean())


# 23 items of continuous scores: the subject is the report of errored and missing samples
@pytest.mark.filterwarnings("ignore:.* item units of continuous:rankci.RankciWarning")
def test_errored_and_missing_samples_are_reported(run):
    with pytest.warns(rankci.RankciWarning, match="not scored by every model"):
        scores = read_inspect(run["dir"])
    assert scores.notes["samples_errored"] == {"mockllm/beta/toy": 2}
    missing = scores.notes["missing"]
    assert missing["items_missing_by_model"] == {
        "mockllm/beta": 1,
        "mockllm/gamma": N_ITEMS - GAMMA_LIMIT,
    }
    assert missing["examples"]["mockllm/beta"] == ["toy/q05"]
    ranking = rankci.rank(scores)
    assert ranking.n_units == GAMMA_LIMIT - 1
    assert ranking.excluded["observations_excluded"] == 2 * (N_ITEMS - GAMMA_LIMIT + 1)


def test_json_logs_read_the_same_as_eval_logs(run):
    assert observations(read(run["json_dir"])) == observations(read(run["dir"]))


def test_scorer_with_dict_values_needs_a_key(run):
    with pytest.raises(ValueError, match="scorer 'graded' gives a dict.*score_key="):
        read(run["dir"], scorer="graded")
    half = observations(read(run["dir"], scorer="graded", score_key="half"))
    right = observations(read(run["dir"], scorer="graded", score_key="right"))
    assert half.keys() == right.keys()
    assert all(half[k] == right[k] / 2 for k in half)
    assert right == observations(read(run["dir"], scorer="match"))
    with pytest.raises(ValueError, match="has no scorer 'f1'; it has: 'match', 'graded'"):
        read(run["dir"], scorer="f1")


# 7-8 items per cluster: the subject is the overriding of columns
@pytest.mark.filterwarnings("ignore:cluster '.*'. .* item units of continuous:rankci.RankciWarning")
def test_clusters_items_and_models_are_overridable(run):
    scores = read(run["dir"], cluster="metadata.subject", item="metadata.qid", model=str.upper)
    assert scores.clusters == SUBJECTS
    assert "toy/Q-7" in scores.items
    assert scores.models == ("MOCKLLM/ALPHA", "MOCKLLM/BETA", "MOCKLLM/GAMMA")
    by_subject = rankci.rank_by_cluster(scores, missing="pairwise")
    assert set(by_subject.rankings) == set(SUBJECTS)
    with pytest.raises(ValueError, match="no field 'metadata.nope'"):
        read(run["dir"], cluster="metadata.nope")


def test_a_newer_log_of_the_same_model_and_task_supersedes(run, tmp_path):
    (alpha,) = [p for p in run["json_dir"].iterdir() if p.name == "alpha.json"]
    data = json.loads(alpha.read_text())
    data["eval"]["created"] = "2099-01-01T00:00:00+00:00"
    for sample in data["samples"]:
        sample["scores"]["match"]["value"] = "C"
    newer = tmp_path / "alpha-rerun.json"
    newer.write_text(json.dumps(data))
    scores = read([run["json_dir"], newer])
    assert scores.notes["superseded"] == [str(alpha.resolve())]
    frame = scores.to_frame()
    assert frame.loc[frame["model"] == "mockllm/alpha", "score"].eq(1.0).all()


@pytest.mark.parametrize(
    "value",
    ["C", "I", "P", "N", True, False, 0, 1, 0.25, "yes", "No", "TRUE", "false", "0.75", "3"],
)
def test_values_convert_as_inspect_converts_them(value):
    assert inspect_value_to_float(value) == value_to_float()(value)


@pytest.mark.parametrize("value", ["maybe", [1, 0], {"a": 1}, None, "nan"])
def test_unconvertible_values_are_errors_not_zeros(value):
    with pytest.raises(ValueError, match="not a number"):
        inspect_value_to_float(value, "here: ")
